package main

import (
	"strings"
	"testing"
)

// TestRowsLineUp: rows of latency, bandwidth and message-rate tests, and
// the header, put every column at the same offset, although each test's
// rows are printed when it finishes.
func TestRowsLineUp(t *testing.T) {
	lat := []sample{{min: 17.2, median: 18.15, p99: 25.01, p999: 120.5}, {min: 17.9, median: 19.2, p99: 30, p999: 200}}
	bw := []sample{{bytesPerSec: 1.2e9}, {bytesPerSec: 1.3e9}}
	rate := []sample{{bytesPerSec: 2e6, msgsPerSec: 1e6}, {bytesPerSec: 2.2e6, msgsPerSec: 1.1e6}}
	out := header() +
		rows(test{name: "write lat 2B pinned"}, lat, lat) +
		rows(test{name: "write bw 64KiB 4 QPs", bandwidth: true}, bw, bw) +
		rows(test{name: "send rate 64B", bandwidth: true, msgRate: true, size: 64}, rate, rate) +
		row(test{name: "write lat 2B pinned"}, "rdmarun B", lat, []sample{{min: 16.5, median: 17.1}, {min: 16.6, median: 17.43}, {min: 16.7, median: 17.9}})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d lines, want a header, two per test and a second build's row:\n%s", len(lines), out)
	}
	// Every column is right-aligned after the first two, so the end of
	// each cell is a fixed offset: the header's title ends there, and each
	// row's cell, when present, ends there too.
	ends := map[string]int{}
	for _, title := range []string{"median us", "Gb/s", "Mmsg/s", "rdmarun/perftest", "95% interval"} {
		ends[title] = strings.Index(lines[0], title) + len(title)
	}
	check := func(line int, cell, title string) {
		t.Helper()
		i := strings.LastIndex(lines[line], cell)
		if i < 0 {
			t.Errorf("line %d lacks %q:\n%s", line, cell, out)
			return
		}
		if end := i + len(cell); end != ends[title] {
			t.Errorf("line %d: %q ends at %d, the %q column at %d:\n%s", line, cell, end, title, ends[title], out)
		}
	}
	check(2, "18.67", "median us")
	check(2, "1.000", "rdmarun/perftest")
	check(2, "[0.843, 1.187]", "95% interval") // symmetric about 1 in ratio: 0.843 x 1.187 = 1
	if !strings.HasSuffix(lines[2], "no difference") {
		t.Errorf("identical runs are not called no difference:\n%s", lines[2])
	}
	check(4, "10.0000", "Gb/s")
	check(6, "1.05", "Mmsg/s")
	check(6, "1.000", "rdmarun/perftest")
	// A second build's row: its own median, and its ratio to
	// perftest's median of 18.675.
	check(7, "17.43", "median us")
	check(7, "0.933", "rdmarun/perftest")
	if !strings.HasPrefix(lines[7], strings.Repeat(" ", 28)+"rdmarun B ") {
		t.Errorf("the second build's row does not start with its label in the tool column:\n%s", out)
	}
}

// TestLatencySampleNaNStdev: a report whose standard deviation perftest
// printed as -nan (ib_send_lat did so in the testbed after a 444 ms round
// trip) still gives its latencies.
func TestLatencySampleNaNStdev(t *testing.T) {
	out := []byte(` #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       2000          37.50          444264.98      137.43   	       1584.15     	-nan   		7336.19 		114100.43
`)
	got, err := latencySample(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (sample{min: 37.5, median: 137.43, p99: 7336.19, p999: 114100.43}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestOffLink: a run whose client sent fewer packets than iterations on
// its netdev takes the ratio away and is named under the rows; an
// unknown count (-1) judges nothing.
func TestOffLink(t *testing.T) {
	on := sample{median: 20, link: linkCheck{netdev: "veth1", sent: 2004, min: 1000}}
	unknown := sample{median: 21, link: linkCheck{netdev: "", sent: -1, min: 1000}}
	loop := sample{median: 12, link: linkCheck{netdev: "veth1", sent: 0, min: 1000}}
	for _, tc := range []struct {
		name   string
		pt, rr []sample
		off    bool
	}{
		{"both crossed", []sample{on, on}, []sample{on}, false},
		{"counts unknown", []sample{unknown}, []sample{unknown}, false},
		{"perftest stayed inside a device", []sample{on, loop}, []sample{on}, true},
		{"rdmarun stayed inside a device", []sample{on}, []sample{loop}, true},
	} {
		r := row(test{name: "write lat 2B cm pinned"}, "rdmarun", tc.pt, tc.rr)
		if got := strings.HasSuffix(r, "off link\n"); got != tc.off {
			t.Errorf("%s: row %q, off link %v, want %v", tc.name, r, got, tc.off)
		}
		if !tc.off && !strings.Contains(r, ".") {
			t.Errorf("%s: row %q has no ratio", tc.name, r)
		}
	}
	c, off := offLink([]sample{on, loop})
	if !off {
		t.Fatal("offLink missed the run that sent nothing")
	}
	want := "  ^ perftest: a run sent 0 packets on veth1 in 1000 iterations, so its QPs did not cross the link (a loopback inside one device); no ratio\n"
	if got := offLinkNote("perftest", c); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
}
