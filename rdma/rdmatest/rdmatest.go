// Package rdmatest holds checks shared by the tests that drive the verbs
// core on a real device (the testbed tests of rdma and peer).
package rdmatest

import (
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

// Complete is the engine's form of spec, failing the test when the spec
// cannot run.
func Complete(t testing.TB, spec rdma.TestSpec) rdma.Test {
	t.Helper()
	c, err := spec.Complete()
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	return c
}

// CheckResult asserts what must hold for any successful result.
func CheckResult(t testing.TB, r *rdma.Result) {
	t.Helper()
	s := r.Spec
	if s.Measure == rdma.MeasureLatency {
		l := r.Latency
		if l == nil {
			t.Fatal("no latency stats")
		}
		want := s.Iterations * s.QPs
		if d := l.Delivery; d != nil {
			// UD: a round trip that timed out has no sample; an early end
			// on a silent path leaves the rest unmade.
			unanswered := int(d.Sent - d.Received)
			if s.Duration == 0 && (l.RTT.Count > want || (!d.Silent && l.RTT.Count < want-unanswered)) {
				t.Errorf("%d samples, want %d less at most the %d unanswered", l.RTT.Count, want, unanswered)
			}
			if d.Received == 0 {
				return // nothing was answered, so nothing was timed
			}
		} else if s.Duration == 0 && l.RTT.Count != want {
			t.Errorf("%d samples, want %d", l.RTT.Count, want)
		}
		if l.RTT.Count == 0 || l.RTT.Min <= 0 {
			t.Errorf("empty or zero latency: %+v", l.RTT)
		}
		if !(l.RTT.Min <= l.RTT.P50 && l.RTT.P50 <= l.RTT.P90 && l.RTT.P90 <= l.RTT.P99 && l.RTT.P99 <= l.RTT.P999 && l.RTT.P999 <= l.RTT.Max) {
			t.Errorf("percentiles out of order: %+v", l.RTT)
		}
		if (l.OneWay != nil) != s.Op.OneWay() {
			t.Errorf("one-way reported %v for %s", l.OneWay != nil, s.Op)
		}
		if l.OneWay != nil && l.OneWay.P50 != l.RTT.P50/2 {
			t.Errorf("one-way p50 %v is not RTT p50 %v / 2", l.OneWay.P50, l.RTT.P50)
		}
		var n uint64
		for _, b := range l.Buckets {
			if b.Ns < 0 || b.Ns > 60e9 {
				t.Errorf("latency bucket at %d ns, outside 0 to 60 s", b.Ns)
			}
			n += b.Count
		}
		if n != uint64(l.RTT.Count) {
			t.Errorf("latency buckets hold %d samples, summary %d", n, l.RTT.Count)
		}
	} else {
		bw := r.Bandwidth
		want := 1
		if s.Bidirectional {
			want = 2
		}
		if bw == nil || len(bw.Directions) != want || len(bw.PerQP) != s.QPs {
			t.Fatalf("bandwidth stats %+v, want %d directions and %d QPs", bw, want, s.QPs)
		}
		for _, d := range bw.Directions {
			if s.Duration == 0 && d.Messages != uint64(s.Iterations*s.QPs) {
				t.Errorf("%s->%s: %d messages, want %d", d.From, d.To, d.Messages, s.Iterations*s.QPs)
			}
			if d.Messages == 0 || d.Bytes != d.Messages*uint64(s.Size) || d.Seconds <= 0 || d.BytesPerSecond <= 0 {
				t.Errorf("direction %+v", d)
			}
		}
		for i, per := range bw.PerQP {
			if len(per) != want || per[0].Messages == 0 {
				t.Errorf("QP %d: %+v", i, per)
			}
		}
	}
	// A worker sleeps on the channel only when its CQ is empty; rxe often
	// completes reads, atomics and writes within the post call itself, so
	// only a ping-pong, which waits for the peer, must have slept.
	if s.Mode == rdma.ModeEvent && s.Measure == rdma.MeasureLatency && s.Op.PingPong() && r.Events == 0 {
		t.Error("event mode consumed no completion events")
	}
	if s.Mode == rdma.ModeBusyPoll && r.Events != 0 {
		t.Errorf("busy-poll mode consumed %d events", r.Events)
	}
	if r.Spec.QP.MTU < 256 {
		t.Errorf("effective path MTU %d not recorded", r.Spec.QP.MTU)
	}
	if r.Elapsed <= 0 {
		t.Errorf("elapsed %v", r.Elapsed)
	}
}
