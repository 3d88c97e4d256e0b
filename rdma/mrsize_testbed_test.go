//go:build testbed

package rdma_test

import (
	"os"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestRegisteredBytesMatchesMR: what a responder admits a test by
// (EndpointConfig.RegisteredBytes) is the length of the memory region
// the verbs library really registered for it, huge pages included.
func TestRegisteredBytesMatchesMR(t *testing.T) {
	testbedDevices(t)
	if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("4"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("0"), 0o644)
	for _, spec := range []rdma.TestSpec{
		{Op: rdma.OpWrite, Size: 2},
		{Op: rdma.OpCmpSwap},
		{Op: rdma.OpSend, Size: 65, QPs: 32},
		{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 1 << 20, QPs: 8},
		{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Size: 100_000, QPs: 3, Threads: 3},
		{Op: rdma.OpWrite, Size: 4096, Hugepages: true},
		{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 4096, QPs: 64, SRQ: true},
		{Op: rdma.OpSendImm, QPType: rdma.UD, Size: 1024, QPs: 4},
	} {
		cfg := rdma.SpecConfig(rdmatest.Complete(t, spec), rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex})
		ep, err := rdma.NewEndpoint(cfg)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if got, want := ep.RegisteredBytes(), cfg.RegisteredBytes(); got != want || want == 0 {
			t.Errorf("%s: the MR is %d bytes, RegisteredBytes says %d", spec, got, want)
		}
		ep.Close()
	}
}
