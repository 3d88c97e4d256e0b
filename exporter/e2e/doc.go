// Package e2e holds the end-to-end tests of rdmarun_exporter that run inside
// the soft-RoCE testbed VM (build tag testbed): real exporter processes
// probing each other over rxe, faults injected on the veth pair, and a
// real Prometheus server scraping them. The package has no code of its
// own; `make testbed-test` builds and runs its tests.
package e2e
