//go:build testbed

package rdma_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// siwDevices skips unless the testbed runs soft-iWARP (TESTBED_SIW=1,
// which make testbed-test sets for these tests).
func siwDevices(t *testing.T) {
	t.Helper()
	if os.Getenv("TESTBED_SIW") != "1" {
		t.Skip("soft-iWARP runs with TESTBED_SIW=1 (make testbed-test runs these tests so)")
	}
}

// TestSiwMatrix: over soft-iWARP (siw1 -> siw0), every op x measure x
// mode x connect x QP type either runs with data validation or is
// refused before any traffic with the transport or the attribute named.
// The table is what iWARP and siw allow: RC through the CM only, no
// immediate data (RDMAP has none), no atomics (siw's atomic_cap is
// ATOMIC_NONE).
func TestSiwMatrix(t *testing.T) {
	siwDevices(t)
	refusal := func(spec rdma.TestSpec) string {
		switch {
		case spec.QPType == rdma.UC:
			return "iWARP device, which has reliable connected (rc) QPs only"
		case spec.Connect != rdma.ConnectCM:
			return "iWARP device's QPs connect only through the CM"
		case spec.Op == rdma.OpSendImm || spec.Op == rdma.OpWriteImm:
			return "RDMAP carries no immediate data"
		case spec.Op.Atomic():
			return "atomic_cap ATOMIC_NONE"
		}
		return ""
	}
	ran, refused := 0, 0
	for _, qpType := range []rdma.QPType{rdma.RC, rdma.UC} {
		for _, connect := range []rdma.Connect{rdma.ConnectCM, rdma.ConnectExchange} {
			for _, op := range allOps {
				if qpType == rdma.UC && (op == rdma.OpRead || op.Atomic()) {
					continue // refused by the spec for any transport (TestMatrix)
				}
				for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
					for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
						if op == rdma.OpWrite && m == rdma.MeasureLatency && mode == rdma.ModeEvent {
							continue // refused by the spec for any transport
						}
						spec := rdma.TestSpec{Op: op, Measure: m, Mode: mode, QPType: qpType, Connect: connect, Iterations: 50, Validate: true, QPs: 2}
						if m == rdma.MeasureBandwidth && !op.Atomic() {
							spec.Size = 4096
						}
						want := refusal(spec)
						name := strings.Join([]string{qpType.String(), connect.String(), op.String(), m.String(), mode.String()}, "/")
						t.Run(name, func(t *testing.T) {
							err := runSiw(t, spec)
							switch {
							case want == "" && err != nil:
								t.Fatalf("want a run, got %v", err)
							case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
								t.Fatalf("want refused with %q, got %v", want, err)
							case want != "":
								refused++
								t.Logf("refused: %v", err)
							default:
								ran++
							}
						})
					}
				}
			}
		}
	}
	t.Logf("over siw: %d combinations ran, %d refused naming why", ran, refused)
}

// runSiw runs spec on siw1 -> siw0 in this process, connected the way
// spec says, and checks its result.
func runSiw(t *testing.T, s rdma.TestSpec) error {
	t.Helper()
	spec := rdmatest.Complete(t, s)
	ca, cb := rdma.PairConfig(spec,
		rdma.EndpointConfig{Device: "siw1", GIDIndex: rdma.AutoGIDIndex},
		rdma.EndpointConfig{Device: "siw0", GIDIndex: rdma.AutoGIDIndex})
	var p *rdma.Pair
	var err error
	if spec.Connect == rdma.ConnectCM {
		p, err = rdma.NewCMPair(ca, cb, spec.QP, 10*time.Second, spec.ConnectParallel)
	} else {
		p, err = rdma.NewLoopbackPair(ca, cb, spec.QP)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if tr := p.Requester.Transport(); tr != rdma.TransportIWARP {
		t.Fatalf("siw1's transport is %q, want iWARP", tr)
	}
	r, err := p.Run(context.Background(), spec)
	if err != nil {
		return err
	}
	rdmatest.CheckResult(t, r)
	return nil
}

// TestSiwMeasureConnect: measure connect over soft-iWARP at 1 to 1,024
// QPs, one at a time and 16 at once, as TestCMMeasureConnect over rxe.
func TestSiwMeasureConnect(t *testing.T) {
	siwDevices(t)
	for _, qps := range []int{1, 16, 256, 1024} {
		for _, parallel := range []int{1, 16} {
			if parallel > qps {
				continue
			}
			spec := rdmatest.Complete(t, rdma.TestSpec{Measure: rdma.MeasureConnect, Connect: rdma.ConnectCM, QPs: qps, ConnectParallel: parallel})
			ca, cb := rdma.PairConfig(spec,
				rdma.EndpointConfig{Device: "siw1", GIDIndex: rdma.AutoGIDIndex},
				rdma.EndpointConfig{Device: "siw0", GIDIndex: rdma.AutoGIDIndex})
			p, err := rdma.NewCMPair(ca, cb, spec.QP, 10*time.Second, parallel)
			if err != nil {
				t.Fatalf("%d QPs, %d at once: %v", qps, parallel, err)
			}
			r, err := p.Run(context.Background(), spec)
			p.Close()
			if err != nil {
				t.Fatal(err)
			}
			c := r.Connect
			if len(c.QPs) != qps || c.PerSecond <= 0 {
				t.Fatalf("%d QPs' times of %d, %.1f conn/s", len(c.QPs), qps, c.PerSecond)
			}
			t.Logf("measured over siw: %d QPs, %d at once: %.1f conn/s (elapsed %v); set-up p50 %.0f us, p99 %.0f us, max %.0f us",
				qps, parallel, c.PerSecond, c.Elapsed.Round(time.Microsecond), c.Total.P50/1e3, c.Total.P99/1e3, c.Total.Max/1e3)
		}
	}
}
