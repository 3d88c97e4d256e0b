package main

import (
	"fmt"
	"strings"

	baseline "github.com/rdmarun/rdmarun/runner/compare"
)

// The table's columns: fixed widths, so that rows printed one test at a
// time line up.
var columns = []struct {
	title string
	width int
}{
	{"test", -26}, {"tool", -10}, {"min us", 9}, {"median us", 10}, {"p99 us", 9}, {"p99.9 us", 9},
	{"Gb/s", 9}, {"Mmsg/s", 8}, {"spread", 17}, {"rdmarun/perftest", 17}, {"95% interval", 15}, {"verdict", -13},
}

func line(cells ...string) string {
	var b strings.Builder
	for i, c := range columns {
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "%*s", c.width, cells[i])
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}

func header() string {
	cells := make([]string, len(columns))
	for i, c := range columns {
		cells[i] = c.title
	}
	return line(cells...)
}

// rows are a test's two table rows: perftest's, then rdmarun's with the
// ratio of medians (messages per second for rate tests, bytes per
// second for bandwidth, the median latency otherwise).
func rows(t test, pt, rr []sample) string {
	p := medianOf(pt)
	f := func(format string, v float64) string { return fmt.Sprintf(format, v) }
	var first string
	switch {
	case t.msgRate:
		first = line(t.name, "perftest", "", "", "", "", f("%.4f", p.bytesPerSec*8/1e9), f("%.4g", p.msgsPerSec/1e6), spread(pt, rateOf, "%.4g"), "", "", "")
	case t.bandwidth:
		first = line(t.name, "perftest", "", "", "", "", f("%.4f", p.bytesPerSec*8/1e9), "", spread(pt, gbpsOf, "%.4f"), "", "", "")
	default:
		first = line(t.name, "perftest", f("%.2f", p.min), f("%.2f", p.median), f("%.2f", p.p99), f("%.2f", p.p999), "", "", spread(pt, latencyOf, "%.2f"), "", "", "")
	}
	return first + row(t, "rdmarun", pt, rr)
}

// row is the table row of one rdmarun build, with its ratio of medians
// to perftest's and the 95% interval of the ratio from the runs' spread
// (rdmarun compare's method): "no difference" when it holds 1.
func row(t test, label string, pt, rr []sample) string {
	p, r := medianOf(pt), medianOf(rr)
	f := func(format string, v float64) string { return fmt.Sprintf(format, v) }
	of := latencyOf
	switch {
	case t.msgRate:
		of = rateOf
	case t.bandwidth:
		of = gbpsOf
	}
	ratio, interval, verdict := f("%.3f", of(r)/of(p)), "", ""
	_, ptOff := offLink(pt)
	_, rrOff := offLink(rr)
	switch {
	case ptOff || rrOff:
		ratio = "off link"
	case len(pt) >= 2 && len(rr) >= 2 && positive(pt, of) && positive(rr, of):
		_, lo, hi := baseline.RatioInterval(values(pt, of), values(rr, of), 0.95)
		interval = fmt.Sprintf("[%.3f, %.3f]", lo, hi)
		verdict = "no difference"
		if lo > 1 || hi < 1 {
			verdict = "differs"
		}
	}
	switch {
	case t.msgRate:
		return line("", label, "", "", "", "", f("%.4f", r.bytesPerSec*8/1e9), f("%.4g", r.msgsPerSec/1e6), spread(rr, rateOf, "%.4g"), ratio, interval, verdict)
	case t.bandwidth:
		return line("", label, "", "", "", "", f("%.4f", r.bytesPerSec*8/1e9), "", spread(rr, gbpsOf, "%.4f"), ratio, interval, verdict)
	default:
		return line("", label, f("%.2f", r.min), f("%.2f", r.median), f("%.2f", r.p99), f("%.2f", r.p999), "", "", spread(rr, latencyOf, "%.2f"), ratio, interval, verdict)
	}
}
