package doctorcollector

import (
	"runtime"
	"syscall"
)

// idleNice is the CPU priority the doctor runs at: the lowest.
const idleNice = 19

// runIdle runs f on an OS thread of its own at the lowest CPU priority,
// and waits for it. The doctor reads thousands of sysfs files per port
// where the GID table is large (soft-RoCE's 1,024 entries, three files
// each), which in the emulated testbed is seconds of kernel time; at
// normal priority that starved the exporter's scrapes and probes, so it
// yields to them. On Linux a thread's nice value is its own
// (setpriority on a thread id), and the goroutine exits with the thread
// locked, so the runtime ends the thread rather than hand its priority
// to other goroutines.
func runIdle(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		// Best effort: at worst the doctor runs at normal priority.
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), idleNice)
		f()
	}()
	<-done
}
