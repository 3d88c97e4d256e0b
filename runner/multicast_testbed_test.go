//go:build testbed

package runner

import (
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
	"github.com/rdmarun/rdmarun/runner/report"
)

// TestFleetVMMulticast runs scenarios/multicast.yaml from h0 (rxe0) on
// the 4-host VM: the peer h1 and the receivers h2 and h3, each an
// `rdmarun serve`, join the group, and the report has each receiver's
// count. With the bridge port toward h3 dropping everything, h3 alone
// has lost every message, and the loss threshold fails on it.
func TestFleetVMMulticast(t *testing.T) {
	startFleet(t)
	for _, tc := range []struct {
		name string
		cut  bool
	}{{"clean", false}, {"h3 cut off", true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cut {
				rdmatest.Fault(t, "rx-loss", "3", "100")
			}
			sc, err := Load("../scenarios/multicast.yaml", map[string]string{"peer": "10.0.0.2:18520", "receivers": "10.0.0.3:18520, 10.0.0.4:18520", "messages": "2000"})
			if err != nil {
				t.Fatal(err)
			}
			target := &Remote{Addr: sc.Peer, Local: Endpoint{Device: "rxe0", Port: 1, GIDIndex: rdma.AutoGIDIndex}, Token: fleetToken}
			rep, text := executeLogged(t, sc, target, "scenarios/multicast.yaml", report.Text)
			run := rep.Runs[0]
			if run.Result == nil || len(run.Result.Receivers) != 3 {
				t.Fatalf("run %s: %s; want a result with 3 receivers", run.Status, run.Error)
			}
			for i, r := range run.Result.Receivers {
				want := []string{"10.0.0.2:18520", "10.0.0.3:18520", "10.0.0.4:18520"}[i]
				cut := tc.cut && i == 2
				d := r.Delivery
				switch {
				case r.Host != want || r.Device != "rxe"+string(rune('1'+i)) || d.Sent != 2000 || d.Received+d.Lost != 2000:
					t.Errorf("receiver %d: %+v, want %s accounting for 2000 messages", i, r, want)
				case cut && d.Received != 0, !cut && d.Received == 0:
					t.Errorf("receiver %s: received %d (cut off: %v)", r.Host, d.Received, cut)
				}
				if !strings.Contains(text, want+" (rxe") {
					t.Errorf("the text report does not list receiver %s", want)
				}
			}
			if want := map[bool]report.Status{false: report.Passed, true: report.Failed}[tc.cut]; run.Status != want {
				t.Errorf("status %s, want %s (loss_ratio of the worst receiver: %.3f)", run.Status, want, run.Result.Bandwidth.Directions[0].Delivery.LossRatio)
			}
			checkSchema(t, rep)
		})
	}
}
