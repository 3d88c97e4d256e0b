//go:build testbed

package peer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestMulticastServe: a sender on rxe0 and `rdmarun serve` on hosts 1 to
// 3 (TESTBED_HOSTS=4), each joining the group when the spec names one.
// Every receiver reports its own count: all arrive on clean paths, and
// none at host 3 once its port drops everything.
func TestMulticastServe(t *testing.T) {
	var rs []*responder
	for i, dev := range []string{"rxe1", "rxe2", "rxe3"} {
		if !hasDevice(t, dev) {
			t.Skip("needs four hosts: TESTBED_HOSTS=4")
		}
		rs = append(rs, startServe(t, fmt.Sprintf("10.0.0.%d", i+2), dev, "--allow-unauthenticated", "--no-cm"))
	}
	var addrs []string
	for _, r := range rs {
		addrs = append(addrs, r.addr)
	}
	for _, tc := range []struct {
		name, group string
		cut         bool
	}{
		{"clean", "239.255.78.1", false},
		{"host 3 cut off", "239.255.78.2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cut {
				rdmatest.Fault(t, "rx-loss", "3", "100")
			}
			spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, QPType: rdma.UD, Size: 1024,
				Iterations: 2000, LossTimeout: rdma.Duration(300 * time.Millisecond), Multicast: tc.group})
			cfg := peer.ClientConfig{Device: "rxe0", GIDIndex: rdma.AutoGIDIndex, StepTimeout: 5 * time.Second}
			start := time.Now()
			res, err := peer.RunMulticast(context.Background(), cfg, addrs, spec)
			if err != nil {
				for _, r := range rs {
					t.Logf("%s:\n%s", r.addr, r.output())
				}
				t.Fatal(err)
			}
			t.Logf("took %v", time.Since(start).Round(time.Millisecond))
			cut := ""
			if tc.cut {
				cut = "rxe3"
			}
			rdmatest.CheckMulticast(t, res, 2000, []string{"rxe1", "rxe2", "rxe3"}, cut)
			for i, r := range res.Receivers {
				if r.Host != addrs[i] {
					t.Errorf("receiver %d is %s, want %s", i, r.Host, addrs[i])
				}
			}
		})
	}
}

func hasDevice(t *testing.T, name string) bool {
	devs, err := rdma.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Name == name {
			return true
		}
	}
	return false
}
