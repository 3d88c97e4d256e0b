package perftest

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestParseLatencyReport(t *testing.T) {
	f, err := os.Open("testdata/ib_write_lat.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseLatency(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d rows, want 1", len(got))
	}
	want := Latency{Bytes: 2, Iterations: 200, Min: 34.14, Max: 193.25, Typical: 36.20, Avg: 41.80, Stdev: 18.96, P99: 191.51, P999: 193.25}
	if got[0] != want {
		t.Errorf("got %+v\nwant %+v", got[0], want)
	}
}

// TestParseLatencyNaN: one iteration leaves perftest a standard
// deviation of C's "-nan"; the row still parses, with NaN where perftest
// had no number.
func TestParseLatencyNaN(t *testing.T) {
	hdr := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n"
	got, err := ParseLatency(strings.NewReader(hdr + " 2 1 30.10 30.10 30.10 30.10 -nan 30.10 30.10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !math.IsNaN(got[0].Stdev) || got[0].Avg != 30.10 {
		t.Errorf("got %+v, want stdev NaN and avg 30.10", got)
	}
	for _, s := range []string{"nan", "NaN", "+nan", "-NAN"} {
		if v, err := parseFloat(s); err != nil || !math.IsNaN(v) {
			t.Errorf("parseFloat(%q) = %v, %v; want NaN", s, v, err)
		}
	}
	if _, err := parseFloat("-nanx"); err == nil {
		t.Error("parseFloat(-nanx) succeeded")
	}
}

func TestParseLatencyErrors(t *testing.T) {
	hdr := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n"
	for _, tc := range []struct{ in, want string }{
		{"", "no latency result in the report (did the test run to the end?)"},
		{hdr, "no latency result in the report (did the test run to the end?)"},
		{hdr + " 2 1000 1 2 3\n", `line 2: want 9 columns after the latency header, got 5: "2 1000 1 2 3"`},
		{hdr + " x 1000 1 2 3 4 5 6 7\n", `line 2: #bytes "x": strconv.Atoi: parsing "x": invalid syntax`},
		{hdr + " 2 1000 1 2 3 4 5 6 z\n", `line 2: column 9 "z": strconv.ParseFloat: parsing "z": invalid syntax`},
		{" #bytes #iterations    t_avg[usec]    tps average\n", `line 1: latency header without t_typical (duration mode reports only averages): "#bytes #iterations    t_avg[usec]    tps average"`},
	} {
		_, err := ParseLatency(strings.NewReader(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("input %q:\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

func FuzzParseLatency(f *testing.F) {
	b, err := os.ReadFile("testdata/ib_write_lat.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add(" #bytes #iterations t_typical\n 2 1 1 1 1 1 1 1 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ParseLatency(strings.NewReader(s))
		if err == nil && len(rows) == 0 {
			t.Fatal("no error and no rows")
		}
	})
}

func TestParseReports(t *testing.T) {
	open := func(name string) *os.File {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	bw, err := ParseBandwidth(open("ib_write_bw.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Bandwidth{Bytes: 65536, Iterations: 300, PeakMiBps: 10.23, AvgMiBps: 9.73, MsgRateMpps: 0.000156}); len(bw) != 1 || bw[0] != want {
		t.Errorf("ib_write_bw: %+v, want %+v", bw, want)
	}
	if got := bw[0].BytesPerSecond(); got != 9.73*1048576 {
		t.Errorf("BytesPerSecond = %v", got)
	}
	lat, err := ParseLatency(open("ib_atomic_lat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Latency{Bytes: 8, Iterations: 200, Min: 67.62, Max: 386.67, Typical: 73.36, Avg: 101.33, Stdev: 49.02, P99: 358.28, P999: 386.67}); len(lat) != 1 || lat[0] != want {
		t.Errorf("ib_atomic_lat: %+v, want %+v", lat, want)
	}
	// A latency report is not a bandwidth report, and the reverse.
	if _, err := ParseBandwidth(open("ib_atomic_lat.txt")); err == nil {
		t.Error("ParseBandwidth accepted a latency report")
	}
	if _, err := ParseLatency(open("ib_write_bw.txt")); err == nil {
		t.Error("ParseLatency accepted a bandwidth report")
	}
}

func TestParseBandwidthErrors(t *testing.T) {
	hdr := " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
	for _, tc := range []struct{ in, want string }{
		{"", "no bandwidth result in the report (did the test run to the end?)"},
		{hdr + " 65536 300 1 2\n", `line 2: want 5 columns after the bandwidth header, got 4: "65536 300 1 2"`},
		{hdr + " 65536 x 1 2 3\n", `line 2: #iterations "x": strconv.Atoi: parsing "x": invalid syntax`},
		{" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n", `line 1: bandwidth header without [MB/sec] (run without --report_gbits): "#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"`},
	} {
		_, err := ParseBandwidth(strings.NewReader(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("input %q:\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

func FuzzParseBandwidth(f *testing.F) {
	b, err := os.ReadFile("testdata/ib_write_bw.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ParseBandwidth(strings.NewReader(s))
		if err == nil && len(rows) == 0 {
			t.Fatal("no error and no rows")
		}
	})
}
