//go:build testbed

package rdma_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// runnerThreads counts this process's threads named as an endpoint's
// runner (rr_runner_open names them).
func runnerThreads(t *testing.T) int {
	t.Helper()
	comms, err := filepath.Glob("/proc/self/task/*/comm")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range comms {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended between the glob and the read
		}
		if strings.TrimSpace(string(b)) == "rdmarun-run" {
			n++
		}
	}
	return n
}

// TestRunnerKeptAndJoined: an endpoint's runs start on one runner thread,
// made by its first run and kept between runs (a thread per run is what
// a prober's short runs cannot afford), in every mode and with several
// workers; Close joins it. An endpoint that never ran has none.
func TestRunnerKeptAndJoined(t *testing.T) {
	testbedDevices(t)
	base := runnerThreads(t)
	// Sized for the largest of the runs below: the bandwidth run's queues.
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Size: 64, QPs: 2, Threads: 2, Measure: rdma.MeasureBandwidth})
	ca, cb := rdma.PairConfig(spec,
		rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex},
		rdma.EndpointConfig{Device: "rxe0", GIDIndex: rdma.AutoGIDIndex})
	p, err := rdma.NewLoopbackPair(ca, cb, spec.QP)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := runnerThreads(t) - base; got != 0 {
		t.Errorf("before any run: %d runner threads, want 0", got)
	}
	for i, s := range []rdma.TestSpec{
		{Op: rdma.OpSend, Size: 64, Iterations: 20, QPs: 2},
		{Op: rdma.OpWriteImm, Size: 2, Iterations: 20, QPs: 2, Mode: rdma.ModeBusyPoll},
		{Op: rdma.OpSend, Size: 64, Iterations: 20, QPs: 2, Threads: 2, Measure: rdma.MeasureBandwidth},
		{Op: rdma.OpRead, Size: 64, Iterations: 20, QPs: 2},
	} {
		res, err := p.Run(context.Background(), rdmatest.Complete(t, s))
		if err != nil {
			t.Fatalf("run %d (%s): %v", i, s, err)
		}
		rdmatest.CheckResult(t, res)
		if got := runnerThreads(t) - base; got != 2 {
			t.Errorf("after run %d (%s): %d runner threads, want 2 (one per endpoint, kept)", i, s, got)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := runnerThreads(t) - base; got != 0 {
		t.Errorf("after Close: %d runner threads left, want 0", got)
	}
}
