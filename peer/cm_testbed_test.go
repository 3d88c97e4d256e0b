//go:build testbed

package peer_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/netfault"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestCMRemoteMatrix: every op x measure x mode through rdmarun serve,
// each QP connected through rdma_cm, on 1 and 4 QPs, with data
// validation; every run carries each QP's set-up times.
func TestCMRemoteMatrix(t *testing.T) {
	r := startResponder(t)
	for _, qps := range []int{1, 4} {
		for _, op := range allOps {
			for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
				for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
					if op == rdma.OpWrite && m == rdma.MeasureLatency && mode == rdma.ModeEvent {
						continue // refused before anything runs
					}
					spec := rdma.TestSpec{Op: op, Measure: m, Mode: mode, Iterations: 100, Validate: true, QPs: qps, Connect: rdma.ConnectCM}
					if m == rdma.MeasureBandwidth && !op.Atomic() {
						spec.Size = 4096
					}
					t.Run(fmt.Sprintf("%s/%s/%s/qps%d", op, m, mode, qps), func(t *testing.T) {
						res := run(t, r, spec)
						checkCMTimes(t, res, qps)
					})
				}
			}
		}
	}
}

func checkCMTimes(t *testing.T, res *rdma.Result, qps int) {
	t.Helper()
	if res.Spec.Connect != rdma.ConnectCM {
		t.Errorf("the result's spec connects by %s", res.Spec.Connect)
	}
	c := res.Connect
	if c == nil || len(c.QPs) != qps {
		t.Fatalf("set-up times %+v, want %d QPs'", c, qps)
	}
	for i, q := range c.QPs {
		if q.ResolveAddr <= 0 || q.ResolveRoute <= 0 || q.Connect <= 0 {
			t.Errorf("QP %d set-up %+v, want every step timed", i, q)
		}
	}
	if c.Total.Count != qps || c.Total.Max < c.Total.P50 || c.Connect.Max <= 0 {
		t.Errorf("set-up summary %+v", c.Total)
	}
}

// TestCMMeasureConnectRemote: measure connect through rdmarun serve
// connects every QP, 1 at a time and 8 at once, reports the
// connections per second, and leaves the responder serving: the next
// data test runs.
func TestCMMeasureConnectRemote(t *testing.T) {
	r := startResponder(t)
	for _, parallel := range []int{1, 8} {
		for _, qps := range []int{1, 64} {
			if parallel > qps {
				continue
			}
			t.Run(fmt.Sprintf("qps%d/atonce%d", qps, parallel), func(t *testing.T) {
				spec := rdma.TestSpec{Measure: rdma.MeasureConnect, Connect: rdma.ConnectCM, QPs: qps, ConnectParallel: parallel}
				res, err := peer.Run(context.Background(), client(r), rdmatest.Complete(t, spec))
				if err != nil {
					t.Fatalf("%v\nresponder log:\n%s", err, r.output())
				}
				checkCMTimes(t, res, qps)
				if c := res.Connect; c.Parallel != parallel || c.PerSecond <= 0 || c.Elapsed <= 0 || res.Latency != nil || res.Bandwidth != nil {
					t.Errorf("parallel %d, %.1f conn/s, elapsed %v, latency %v, bandwidth %v", c.Parallel, c.PerSecond, c.Elapsed, res.Latency, res.Bandwidth)
				}
				t.Logf("measured: %d QPs, %d at once, through serve: %.1f conn/s, set-up p50 %.0f us, max %.0f us",
					qps, parallel, res.Connect.PerSecond, res.Connect.Total.P50/1e3, res.Connect.Total.Max/1e3)
			})
		}
	}
	run(t, r, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 50, QPs: 4, Connect: rdma.ConnectCM})
}

// TestCMExchangeBeside: one responder serves exchange and CM tests one
// after another, and the exchange runs carry no CM times.
func TestCMExchangeBeside(t *testing.T) {
	r := startResponder(t)
	for i := range 3 {
		res := run(t, r, rdma.TestSpec{Op: rdma.OpSend, Iterations: 50, QPs: 2, Connect: rdma.ConnectCM})
		checkCMTimes(t, res, 2)
		if res := run(t, r, rdma.TestSpec{Op: rdma.OpSend, Iterations: 50, QPs: 2}); res.Connect != nil {
			t.Errorf("round %d: an exchange run carries CM times %+v", i, res.Connect)
		}
	}
}

// TestCMNoCMResponder: a responder started with --no-cm refuses a CM
// test over the control channel at once, naming the flag, and still
// serves exchange tests.
func TestCMNoCMResponder(t *testing.T) {
	r := startResponder(t, "--no-cm")
	begin := time.Now()
	_, err := peer.Run(context.Background(), client(r), rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Connect: rdma.ConnectCM}))
	if err == nil || !strings.Contains(err.Error(), "does not listen for rdma_cm") || !strings.Contains(err.Error(), "--no-cm") {
		t.Fatalf("got %v, want the responder's refusal naming --no-cm", err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	run(t, r, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 50})
}

// cmEndpoint opens rxe1 for a raw CM connect of its own.
func cmEndpoint(t *testing.T) (*rdma.Endpoint, rdma.Test) {
	t.Helper()
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite})
	ep, err := rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep, spec
}

// TestCMRejectedByResponder: connect requests no test expects reach the
// responder's listener and are REJECTED with its reason, which the
// requester's error quotes, within a second; the responder serves the
// next test.
func TestCMRejectedByResponder(t *testing.T) {
	r := startResponder(t)
	for _, tc := range []struct {
		name    string
		private []byte
		reason  string
	}{
		{"no private data", nil, "not a connect request of an rdmarun test"},
		{"an unknown session", append([]byte("rrcm"), make([]byte, 10)...), "no test expects this connect request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, spec := cmEndpoint(t)
			begin := time.Now()
			err := ep.ConnectCM(netip.MustParseAddrPort(r.cm), func(int) []byte { return tc.private }, spec.QP, 5*time.Second, 1)
			took := time.Since(begin)
			var ce *rdma.CMError
			if !errors.As(err, &ce) || ce.Event != rdma.CMRejected || ce.Step != "connect" {
				t.Fatalf("got %v, want the connect step REJECTED", err)
			}
			if !strings.Contains(err.Error(), `the peer said: "`+tc.reason) {
				t.Errorf("the error does not quote the responder's reason %q: %v", tc.reason, err)
			}
			if took > time.Second {
				t.Errorf("the rejection took %v", took)
			}
			t.Logf("%v: %v", took, err)
		})
	}
	res := run(t, r, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 50, Connect: rdma.ConnectCM})
	checkCMTimes(t, res, 1)
}

// TestCMHostDown: the CM resolves an address in the testbed's subnet
// that no host answers for (a host that is down): address resolution
// fails, named as such, within the step's deadline plus a margin.
func TestCMHostDown(t *testing.T) {
	ep, spec := cmEndpoint(t)
	const step = 3 * time.Second
	begin := time.Now()
	err := ep.ConnectCM(netip.MustParseAddrPort("10.0.0.99:18521"), func(int) []byte { return nil }, spec.QP, step, 1)
	took := time.Since(begin)
	var ce *rdma.CMError
	if !errors.As(err, &ce) || ce.Step != "resolve_addr" {
		t.Fatalf("got %v, want address resolution to fail", err)
	}
	if !strings.Contains(err.Error(), "did not answer neighbour resolution") {
		t.Errorf("the error does not say the address went unanswered: %v", err)
	}
	if took > step+time.Second {
		t.Errorf("the failure took %v, more than the step's %v and a second", took, step)
	}
	t.Logf("%v: %v", took, err)
}

// TestCMPacketsDropped: a filter drops the CM's MADs (RoCE packets to
// QP 1) from the requester, while the control channel and ARP pass. The
// connect step ends at its deadline, naming dropped CM packets among
// the causes; the responder gives up on the session and serves the next
// test once the filter is gone.
func TestCMPacketsDropped(t *testing.T) {
	r := startResponder(t)
	remove := netfault.CMLoss(t, "veth1", "100%")
	cfg := client(r)
	cfg.StepTimeout = 3 * time.Second
	begin := time.Now()
	_, err := peer.Run(context.Background(), cfg, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 50, Connect: rdma.ConnectCM}))
	took := time.Since(begin)
	remove()
	var ce *rdma.CMError
	if !errors.As(err, &ce) || ce.Step != "connect" || ce.Waited == 0 {
		t.Fatalf("got %v, want the connect step to time out", err)
	}
	if !strings.Contains(err.Error(), "CM's packets dropped") {
		t.Errorf("the error does not name dropped CM packets: %v", err)
	}
	// The step's deadline, plus the steps before it and the control
	// channel's exchanges.
	if took > cfg.StepTimeout+3*time.Second {
		t.Errorf("the failure took %v", took)
	}
	t.Logf("%v: %v", took, err)
	res := run(t, r, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 50, Connect: rdma.ConnectCM})
	checkCMTimes(t, res, 1)
}
