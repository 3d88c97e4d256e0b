package perftest

import (
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
