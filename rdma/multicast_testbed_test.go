//go:build testbed

package rdma_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// multicastEndpoints makes a UD endpoint on each device for spec, joined
// to group: the first as the sender, the rest as receivers.
func multicastEndpoints(t *testing.T, spec rdma.Test, group netip.Addr, devices ...string) (*rdma.Endpoint, []*rdma.Endpoint) {
	t.Helper()
	var eps []*rdma.Endpoint
	for _, d := range devices {
		e, err := rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: d, GIDIndex: rdma.AutoGIDIndex}))
		if err != nil {
			t.Fatalf("NewEndpoint(%s): %v", d, err)
		}
		t.Cleanup(func() {
			if err := e.Close(); err != nil {
				t.Errorf("Close(%s): %v", d, err)
			}
		})
		eps = append(eps, e)
	}
	// Receivers first, so that the group has members when the sender
	// joins.
	for i := len(eps) - 1; i >= 0; i-- {
		if err := eps[i].JoinMulticast(group, i == 0, spec.QP, 5*time.Second); err != nil {
			t.Fatalf("JoinMulticast(%s) on %s: %v", group, devices[i], err)
		}
	}
	return eps[0], eps[1:]
}

// TestMulticast: one sender (rxe0) and three receivers (rxe1 to rxe3,
// TESTBED_HOSTS=4) in a group joined through the CM. Every receiver
// counts the sender's messages, and with the path to rxe3 dropping
// everything, rxe3 reports them all lost while the others still
// receive: the counts are each receiver's own.
func TestMulticast(t *testing.T) {
	devs := testbedDevices(t)
	if _, ok := devs["rxe3"]; !ok {
		t.Skip("needs four hosts: TESTBED_HOSTS=4")
	}
	for _, tc := range []struct {
		name  string
		group string
		fault []string
	}{
		{name: "clean", group: "239.255.77.1"},
		{name: "rxe3 cut off", group: "239.255.77.2", fault: []string{"rx-loss", "3", "100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				rdmatest.Fault(t, tc.fault...)
			}
			spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, QPType: rdma.UD, Size: 1024,
				Iterations: 2000, LossTimeout: rdma.Duration(300 * time.Millisecond), Multicast: tc.group})
			tx, rx := multicastEndpoints(t, spec, netip.MustParseAddr(tc.group), "rxe0", "rxe1", "rxe2", "rxe3")
			start := time.Now()
			res, err := rdma.RunMulticast(context.Background(), spec, tx, rx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("took %v", time.Since(start).Round(time.Millisecond))
			cut := ""
			if tc.fault != nil {
				cut = "rxe3"
			}
			rdmatest.CheckMulticast(t, res, 2000, []string{"rxe1", "rxe2", "rxe3"}, cut)
		})
	}
}
