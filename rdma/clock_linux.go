//go:build linux && cgo && !nordma

package rdma

/*
#include "shim.h"
*/
import "C"

// latencyClock reports the clock the latency loops time round trips
// with in this process (calibrating it on first use): the TSC, or
// CLOCK_MONOTONIC where the TSC is not invariant or the kernel does not
// trust it, and how many nanoseconds one of its ticks is.
func latencyClock() (tsc bool, nsPerTick float64) {
	var mult C.uint64_t
	tsc = C.rr_latency_clock(&mult) != 0
	return tsc, float64(mult) / (1 << 32)
}

// latencyTicks reads the latency loops' clock.
func latencyTicks() uint64 { return uint64(C.rr_latency_ticks()) }
