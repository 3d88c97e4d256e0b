// Package soak proves the responder over a long run: one real `rdmarun
// serve` answers a stream of tests (every op, measure, mode and QP
// transport, 2 B to 1 MiB, 1 to 8 QPs, sessions kept and not) from
// several client processes, while one client in twenty misbehaves. The
// responder's fds, goroutines, threads, RSS and the kernel's RDMA objects
// are sampled as it goes and must be back at the idle baseline when the
// stream ends (goroutines by their stacks at rest: ParseGoroutines): what
// a fleet operator needs before trusting a daemon that answers probes for
// months.
//
// The test itself, TestSoak, runs in the soft-RoCE VM (`make soak`; CI
// runs its short form in `make testbed-test`). This package's plain files
// are the parts that need no device: the deterministic plan of tests, the
// sense checks of a result, the parsers of /proc and `rdma resource
// show`, and the report table, each unit-tested here.
//
// Everything is drawn from one seed, printed by the test: SOAK_SEED=N
// replays a run.
package soak
