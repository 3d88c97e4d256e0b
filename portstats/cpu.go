package portstats

import "time"

// CPUSpan is the process's CPU time at the start of a measured stretch.
type CPUSpan struct {
	user, sys time.Duration
	err       error
}

// CPUUsage is the CPU time the whole process used during a CPUSpan. It
// includes every thread (the Go runtime's, the garbage collector's, any a
// verbs provider starts), because all of them are a cost of running the
// test; RUSAGE_THREAD would miss work the scheduler moved to another thread.
type CPUUsage struct {
	User, Sys time.Duration
	// Err is set, and the durations are zero, when the OS could not report
	// CPU time; a result should then show no CPU figure rather than zero.
	Err error
}

// StartCPU records the process's CPU time now. An error is kept for Stop to
// report, so the measured code needs no error handling around it.
func StartCPU() CPUSpan {
	u, s, err := CPUTime()
	return CPUSpan{user: u, sys: s, err: err}
}

// Stop returns the CPU time used since StartCPU.
func (s CPUSpan) Stop() CPUUsage {
	if s.err != nil {
		return CPUUsage{Err: s.err}
	}
	u, sys, err := CPUTime()
	if err != nil {
		return CPUUsage{Err: err}
	}
	return CPUUsage{User: u - s.user, Sys: sys - s.sys}
}

// Total is user plus system time.
func (u CPUUsage) Total() time.Duration { return u.User + u.Sys }

// PerOp divides Total by n operations, or returns 0 if n is not positive.
// The kernel accounts CPU time in scheduler ticks on many configurations,
// so the figure is only meaningful over enough operations to span many
// milliseconds.
func (u CPUUsage) PerOp(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return u.Total() / time.Duration(n)
}
