package soak

import (
	"errors"
	"fmt"

	"github.com/rdmarun/rdmarun/rdma"
)

// CheckResult reports what makes no sense in a good test's result: not
// the test that was asked for, samples or messages missing, nothing
// measured. A responder that answers with a plausible-looking but empty
// result must fail the soak as surely as one that errs.
func CheckResult(want rdma.Test, res *rdma.Result) error {
	if res == nil {
		return errors.New("no result")
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	got := res.Spec
	if got.Op != want.Op || got.Measure != want.Measure || got.Mode != want.Mode || got.QPType != want.QPType ||
		got.Size != want.Size || got.QPs != want.QPs || got.Iterations != want.Iterations || got.Bidirectional != want.Bidirectional {
		add("ran %s, asked for %s", got.Settings(), want.Settings())
	}
	if len(res.Sides) != 2 {
		add("%d sides, want requester and responder", len(res.Sides))
	}
	if res.Elapsed <= 0 {
		add("elapsed %v", res.Elapsed)
	}
	switch want.Measure {
	case rdma.MeasureLatency:
		l := res.Latency
		if l == nil {
			add("no latency stats")
			break
		}
		if l.RTT.Count != want.Iterations*want.QPs {
			add("%d RTT samples, want %d", l.RTT.Count, want.Iterations*want.QPs)
		}
		if l.RTT.Min <= 0 || !(l.RTT.Min <= l.RTT.P50 && l.RTT.P50 <= l.RTT.P99 && l.RTT.P99 <= l.RTT.Max) {
			add("RTT min %.0f p50 %.0f p99 %.0f max %.0f ns: zero or out of order", l.RTT.Min, l.RTT.P50, l.RTT.P99, l.RTT.Max)
		}
	case rdma.MeasureBandwidth:
		bw := res.Bandwidth
		dirs := 1
		if want.Bidirectional {
			dirs = 2
		}
		if bw == nil || len(bw.Directions) != dirs {
			add("bandwidth stats %+v, want %d directions", bw, dirs)
			break
		}
		for _, d := range bw.Directions {
			if d.Messages != uint64(want.Iterations*want.QPs) {
				add("%s->%s: %d messages, want %d", d.From, d.To, d.Messages, want.Iterations*want.QPs)
			}
			if d.Bytes != d.Messages*uint64(want.Size) || d.Bytes == 0 || d.BytesPerSecond <= 0 {
				add("%s->%s: %d bytes for %d messages of %d B at %.0f B/s", d.From, d.To, d.Bytes, d.Messages, want.Size, d.BytesPerSecond)
			}
		}
	}
	return errors.Join(errs...)
}
