//go:build testbed

package rdma_test

import (
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestDeviceLimitsRefused: queues deeper than rxe's completion queues
// hold (max_cqe 32767: tx_depth 16384 + rx_depth 16384 + 16 is above it)
// are refused before any QP exists, naming the limit, rather than failed
// by ibv_create_cq with EINVAL.
func TestDeviceLimitsRefused(t *testing.T) {
	testbedDevices(t)
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, TxDepth: 16384, RxDepth: 16384, CQModeration: 100})
	c := rdma.SpecConfig(spec, rdma.EndpointConfig{Device: "rxe0", GIDIndex: rdma.AutoGIDIndex})
	e, err := rdma.NewEndpoint(c)
	if err == nil {
		e.Close()
		t.Fatal("NewEndpoint accepted queues deeper than the device's CQs")
	}
	if !strings.Contains(err.Error(), "rxe0 allows at most 32767 (max_cqe, ibv_devinfo -v)") {
		t.Fatalf("NewEndpoint = %v, want the max_cqe limit named", err)
	}
}
