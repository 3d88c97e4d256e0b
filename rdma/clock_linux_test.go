//go:build linux && cgo && !nordma

package rdma

import (
	"math"
	"testing"
	"time"
)

// TestLatencyClockAgreesWithMonotonic: a span timed with the latency
// loops' clock and converted as they convert it matches the same span on
// CLOCK_MONOTONIC (Go's monotonic clock) to within the histogram's 0.1%,
// whichever clock this machine gets.
func TestLatencyClockAgreesWithMonotonic(t *testing.T) {
	tsc, nsPerTick := latencyClock()
	t.Logf("TSC: %v, %.6f ns per tick", tsc, nsPerTick)
	if !tsc && nsPerTick != 1 {
		t.Fatalf("CLOCK_MONOTONIC ticks are nanoseconds, got %v ns per tick", nsPerTick)
	}
	if tsc && (nsPerTick < 0.01 || nsPerTick > 100) {
		t.Fatalf("%v ns per TSC cycle is not a CPU's rate", nsPerTick)
	}
	for _, span := range []time.Duration{20 * time.Millisecond, 200 * time.Millisecond} {
		t0, m0, w0 := bracket()
		time.Sleep(span)
		t1, m1, w1 := bracket()
		got, want := float64(t1-t0)*nsPerTick, float64(m1.Sub(m0))
		// 0.1%, and how far apart the two clocks' reads were at each end:
		// a cgo call can be preempted between them (by hundreds of
		// microseconds under emulation), which says nothing of the clock.
		if tol := want/1000 + float64(w0+w1); math.Abs(got-want) > tol {
			t.Errorf("%v: the latency clock measured %.0f ns, CLOCK_MONOTONIC %.0f ns (tolerance %.0f)", span, got, want, tol)
		}
	}
}

// bracket reads the latency clock between two reads of Go's monotonic
// clock, the tightest of a few tries: the tick, the monotonic time
// halfway, and half the bracket's width (how far off that time can be).
func bracket() (ticks uint64, mid time.Time, half time.Duration) {
	half = time.Duration(math.MaxInt64)
	for range 5 {
		a := time.Now()
		tk := latencyTicks()
		b := time.Now()
		if w := b.Sub(a) / 2; w < half {
			ticks, mid, half = tk, a.Add(w), w
		}
	}
	return ticks, mid, half
}
