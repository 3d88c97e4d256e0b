//go:build !linux

package doctorcollector

// runIdle runs f; only Linux gives a thread a priority of its own.
func runIdle(f func()) { f() }
