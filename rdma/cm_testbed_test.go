//go:build testbed

package rdma_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// newCMPair connects rxe1 (requester) to rxe0 through the CM.
func newCMPair(t *testing.T, s rdma.TestSpec) *rdma.Pair {
	t.Helper()
	s.Connect = rdma.ConnectCM
	spec := rdmatest.Complete(t, s)
	ca, cb := rdma.PairConfig(spec,
		rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex},
		rdma.EndpointConfig{Device: "rxe0", GIDIndex: rdma.AutoGIDIndex})
	p, err := rdma.NewCMPair(ca, cb, spec.QP, 10*time.Second, spec.ConnectParallel)
	if err != nil {
		t.Fatalf("NewCMPair: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// TestCMMatrix: every op x measure x mode runs over RC QPs connected
// through rdma_cm, with data validation, on 1 and 4 QPs; every QP's
// set-up times are recorded, and the QPs hold the test's timers and
// retries, not the CM's (the CM chose timeout 19 in the prototype run).
func TestCMMatrix(t *testing.T) {
	testbedDevices(t)
	for _, qps := range []int{1, 4} {
		for _, op := range allOps {
			for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
				for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
					if op == rdma.OpWrite && m == rdma.MeasureLatency && mode == rdma.ModeEvent {
						continue // refused before anything runs (TestMatrix)
					}
					spec := rdma.TestSpec{Op: op, Measure: m, Mode: mode, Iterations: 100, Validate: true, QPs: qps}
					if m == rdma.MeasureBandwidth && !op.Atomic() {
						spec.Size = 4096
					}
					t.Run(op.String()+"/"+m.String()+"/"+mode.String()+"/"+string(rune('0'+qps)), func(t *testing.T) {
						p := newCMPair(t, spec)
						times := p.Requester.CMTimes()
						if len(times) != qps {
							t.Fatalf("%d QPs' set-up times, want %d", len(times), qps)
						}
						for i, ct := range times {
							if ct.ResolveAddr <= 0 || ct.ResolveRoute <= 0 || ct.Connect <= 0 {
								t.Errorf("QP %d set-up times %+v, want each step timed", i, ct)
							}
						}
						for i, ct := range p.Responder.CMTimes() {
							if ct.Connect <= 0 {
								t.Errorf("responder QP %d accept time %+v", i, ct)
							}
						}
						want := rdma.DefaultQPAttrs()
						if got := p.Requester.Attrs(); got.Timeout != want.Timeout || got.RetryCnt != want.RetryCnt || got.RNRRetry != want.RNRRetry {
							t.Errorf("QP attrs %+v: timeout, retry_cnt and rnr_retry are not the test's %+v", got, want)
						}
						r, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
						if err != nil {
							t.Fatalf("%s: %v", spec, err)
						}
						rdmatest.CheckResult(t, r)
						t.Logf("set-up QP 0: addr %v, route %v, connect %v", times[0].ResolveAddr, times[0].ResolveRoute, times[0].Connect)
					})
				}
			}
		}
	}
}

// TestCMNoListener: a connect to a port nobody listens on is refused by
// the peer's CM (REJECTED on RoCE) within the step's deadline, named as
// such.
func TestCMNoListener(t *testing.T) {
	testbedDevices(t)
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite})
	ep, err := rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex}))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	begin := time.Now()
	err = ep.ConnectCM(netip.MustParseAddrPort("10.0.0.1:7999"), func(int) []byte { return nil }, spec.QP, 5*time.Second, 1)
	took := time.Since(begin)
	var ce *rdma.CMError
	if !errors.As(err, &ce) || ce.Step != "connect" || (ce.Event != rdma.CMRejected && ce.Event != rdma.CMUnreachable) {
		t.Fatalf("got %v, want the connect step REJECTED or UNREACHABLE", err)
	}
	if took > 6*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	if !strings.Contains(err.Error(), "likely cause:") {
		t.Errorf("no likely cause: %v", err)
	}
	t.Logf("%v: %v", took, err)
}

// TestCMAddressNotOwned: listening on an address no RDMA device owns is
// refused, naming the address.
func TestCMAddressNotOwned(t *testing.T) {
	testbedDevices(t)
	l, err := rdma.ListenCM(netip.MustParseAddrPort("10.9.9.9:0"), 1)
	if err == nil {
		l.Close()
		t.Fatal("listening on 10.9.9.9 succeeded")
	}
	if !strings.Contains(err.Error(), "10.9.9.9") {
		t.Errorf("the error does not name the address: %v", err)
	}
	t.Log(err)
}

// TestCMListenerClose: closing a listener that another goroutine waits
// on ends that wait within a poll slice, and frees nothing under it.
func TestCMListenerClose(t *testing.T) {
	testbedDevices(t)
	l, err := rdma.ListenCM(netip.MustParseAddrPort("10.0.0.1:0"), 4)
	if err != nil {
		t.Fatal(err)
	}
	type next struct {
		r   *rdma.CMRequest
		err error
	}
	got := make(chan next, 1)
	go func() {
		r, err := l.Next(time.Now().Add(10 * time.Second))
		got <- next{r, err}
	}()
	time.Sleep(100 * time.Millisecond)
	begin := time.Now()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.r != nil || !errors.Is(n.err, rdma.ErrCMListenerClosed) {
			t.Errorf("Next after Close: %+v, %v; want no request and ErrCMListenerClosed", n.r, n.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Next still waiting 2 s after Close")
	}
	t.Logf("Next returned %v after Close began", time.Since(begin))
}

// TestCMConnectTwice: an endpoint whose QPs are connected refuses a
// second connection instead of leaking the first one's ids.
func TestCMConnectTwice(t *testing.T) {
	testbedDevices(t)
	p := newCMPair(t, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10})
	err := p.Requester.ConnectCM(netip.MustParseAddrPort("10.0.0.1:7999"), func(int) []byte { return nil }, p.Requester.Attrs(), time.Second, 1)
	if err == nil || !strings.Contains(err.Error(), "already connected") {
		t.Fatalf("second ConnectCM: %v, want a refusal", err)
	}
}

// TestCMMeasureConnect: a measure connect run on a pair reports every
// QP's set-up and the connections per second, at 1 to 1,024 QPs, one
// after another and with 16 connecting at once; a second run on the
// same pair is refused, since its connections were reported already.
func TestCMMeasureConnect(t *testing.T) {
	testbedDevices(t)
	for _, qps := range []int{1, 16, 256, 1024} {
		for _, parallel := range []int{1, 16} {
			if parallel > qps {
				continue
			}
			spec := rdma.TestSpec{Measure: rdma.MeasureConnect, Connect: rdma.ConnectCM, QPs: qps, ConnectParallel: parallel}
			t.Run(fmt.Sprintf("%dqps/%datonce", qps, parallel), func(t *testing.T) {
				p := newCMPair(t, spec)
				r, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
				if err != nil {
					t.Fatal(err)
				}
				c := r.Connect
				if c == nil || len(c.QPs) != qps || c.Total.Count != qps || c.Parallel != parallel {
					t.Fatalf("connect stats %+v, want %d QPs, %d at once", c, qps, parallel)
				}
				if c.Elapsed <= 0 || c.PerSecond <= 0 || r.Latency != nil || r.Bandwidth != nil {
					t.Fatalf("elapsed %v, %.1f conn/s, latency %v, bandwidth %v", c.Elapsed, c.PerSecond, r.Latency, r.Bandwidth)
				}
				// One after another, the whole takes at least the QPs'
				// set-ups end to end.
				if parallel == 1 {
					var sum time.Duration
					for _, q := range c.QPs {
						sum += q.Total()
					}
					if c.Elapsed < sum {
						t.Errorf("elapsed %v is shorter than the QPs' set-ups one after another, %v", c.Elapsed, sum)
					}
				}
				t.Logf("measured: %d QPs, %d at once: %.1f conn/s (elapsed %v); set-up p50 %.0f us, p99 %.0f us, max %.0f us; connect p50 %.0f us",
					qps, parallel, c.PerSecond, c.Elapsed.Round(time.Microsecond), c.Total.P50/1e3, c.Total.P99/1e3, c.Total.Max/1e3, c.Connect.P50/1e3)
				if _, err := p.Run(context.Background(), rdmatest.Complete(t, spec)); err == nil {
					t.Error("a second measure connect run on the same pair was not refused")
				}
			})
		}
	}
}
