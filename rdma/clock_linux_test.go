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
		t0, m0 := latencyTicks(), time.Now()
		time.Sleep(span)
		t1, m1 := latencyTicks(), time.Now()
		got, want := float64(t1-t0)*nsPerTick, float64(m1.Sub(m0))
		// 0.1%, and 50 us for the reads of two clocks not being one instant.
		if tol := want/1000 + 50e3; math.Abs(got-want) > tol {
			t.Errorf("%v: the latency clock measured %.0f ns, CLOCK_MONOTONIC %.0f ns (tolerance %.0f)", span, got, want, tol)
		}
	}
}
