//go:build testbed

package peer_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/internal/testcert"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

const fleetToken = "fleet-token"

// fleetPair starts B (serve on rxe0, 10.0.0.1) and A (serve on rxe1,
// 10.0.0.2) sharing one token file, as a fleet's hosts do.
func fleetPair(t *testing.T, args ...string) (a, b *responder) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(fleetToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--token-file", tokenFile)
	b = startServe(t, "10.0.0.1", "rxe0", args...)
	a = startServe(t, "10.0.0.2", "rxe1", args...)
	return a, b
}

// coordinator is this process's view of A: no RDMA runs here.
func coordinator(a *responder) peer.ClientConfig {
	return peer.ClientConfig{Addr: a.addr, Token: fleetToken, StepTimeout: 5 * time.Second}
}

func relayed(t *testing.T, a, b *responder, cfg peer.ClientConfig, spec rdma.TestSpec) *rdma.Result {
	t.Helper()
	relayed, err := peer.RunVia(context.Background(), cfg, peer.Remote{Addr: b.addr}, rdmatest.Complete(t, spec))
	if err != nil {
		t.Fatalf("%s via %s: %v\nA's log:\n%s\nB's log:\n%s", spec, a.addr, err, a.output(), b.output())
	}
	// rxe reports its netdev's rate: A read its own port's for the
	// coordinator's link_gbps.
	if relayed.LinkGbps <= 0 {
		t.Errorf("relayed link rate %v, want A's port's", relayed.LinkGbps)
	}
	res := relayed.Result
	rdmatest.CheckResult(t, res)
	if len(res.Sides) != 2 || res.Sides[0].Device != "rxe1" || res.Sides[1].Device != "rxe0" {
		t.Errorf("sides %+v, want A's rxe1 then B's rxe0", res.Sides)
	}
	if res.Requester.Device != "rxe1" || res.Responder.Device != "rxe0" {
		t.Errorf("requester %s, responder %s; want rxe1 and rxe0", res.Requester.Device, res.Responder.Device)
	}
	return res
}

// TestRelayed: the coordinator has A's serve run write latency and send
// bandwidth against B's serve, and gets both sides' results.
func TestRelayed(t *testing.T) {
	a, b := fleetPair(t)
	lat := relayed(t, a, b, coordinator(a), rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Iterations: 500})
	var inBuckets uint64
	for _, b := range lat.Latency.Buckets {
		inBuckets += b.Count
	}
	if l := lat.Latency; l.RTT.Count != 500 || l.RTT.P50 <= 0 || inBuckets != 500 {
		t.Errorf("write latency: %d samples, p50 %v ns, %d in the buckets", l.RTT.Count, l.RTT.P50, inBuckets)
	}
	t.Logf("write latency via A: p50 %.0f ns, p99 %.0f ns", lat.Latency.RTT.P50, lat.Latency.RTT.P99)
	bw := relayed(t, a, b, coordinator(a), rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Iterations: 2000, Validate: true})
	if d := bw.Bandwidth.Directions; len(d) != 1 || d[0].Messages != 2000 || d[0].BytesPerSecond <= 0 {
		t.Errorf("send bandwidth: %+v, want 2000 messages one way", d)
	}
	t.Logf("send bandwidth via A: %.3f Gb/s", bw.Bandwidth.Directions[0].Gbps())
}

// TestRelayedPeerDown: B not listening is an environment error of A's
// hop, typed and within the deadline, and A goes on serving.
func TestRelayedPeerDown(t *testing.T) {
	a, b := fleetPair(t)
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Iterations: 100})
	start := time.Now()
	_, err := peer.RunVia(context.Background(), coordinator(a), peer.Remote{Addr: "10.0.0.1:1"}, spec)
	took := time.Since(start)
	var re *peer.RelayedError
	if !errors.As(err, &re) || !errors.Is(err, peer.ErrUnreachable) || re.Stage != peer.StageConnecting || re.Addr != "10.0.0.1:1" {
		t.Fatalf("B not listening: %v, want a RelayedError at connecting that matches ErrUnreachable\n%s", err, a.output())
	}
	if took > 10*time.Second {
		t.Errorf("B not listening: answered after %v", took)
	}
	t.Logf("B not listening, after %v: %v", took.Round(time.Millisecond), err)
	relayed(t, a, b, coordinator(a), rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Iterations: 100})
}

// qpsOn counts the RC QPs on a device, as the kernel reports them. In
// these tests only the serve on the device holds any (the coordinator
// runs no RDMA); the kernel names the thread that made a QP, not its
// process, so the device is what tells the two serves apart.
func qpsOn(t *testing.T, device string) int {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show", "qp").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show qp: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "link "+device+"/") && strings.Contains(line, " type RC ") {
			n++
		}
	}
	return n
}

// TestRelayedCoordinatorGone: a coordinator that gives up mid-test makes
// A stop its test, and A (and B) free everything and serve the next
// request.
//
// A notices at once (its log says so within 2 s). How soon the QPs go
// is up to the verbs core: a bandwidth worker that keeps making progress
// sees a stop request only at its next long wait (rdma/loop.c checks the
// stop flag only after SPIN_CHECK idle spins), so freeing is held to the
// test's own bound (duration plus stall deadline) and its time is logged.
func TestRelayedCoordinatorGone(t *testing.T) {
	a, b := fleetPair(t)
	const length, stall = 8 * time.Second, 5 * time.Second
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Duration: rdma.Duration(length), StallTimeout: rdma.Duration(stall)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := peer.RunVia(ctx, coordinator(a), peer.Remote{Addr: b.addr}, spec)
		done <- err
	}()
	// Cancel once the test runs: both serves hold QPs.
	for deadline := time.Now().Add(15 * time.Second); qpsOn(t, "rxe1") == 0 || qpsOn(t, "rxe0") == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no QPs on A and B within 15 s\nA:\n%s\nB:\n%s", a.output(), b.output())
		}
	}
	t.Logf("running: A holds %d QPs, B %d", qpsOn(t, "rxe1"), qpsOn(t, "rxe0"))
	time.Sleep(time.Second)
	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled RunVia: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RunVia did not return within 5 s of its cancellation")
	}
	for deadline := start.Add(2 * time.Second); !strings.Contains(a.output(), "the coordinator left; stopping the test"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("A did not notice the coordinator leaving within 2 s\n%s", a.output())
		}
	}
	bound := length + stall
	var freedA, freedB time.Duration
	for time.Since(start) < bound && (freedA == 0 || freedB == 0) {
		if freedA == 0 && qpsOn(t, "rxe1") == 0 {
			freedA = time.Since(start)
		}
		if freedB == 0 && qpsOn(t, "rxe0") == 0 {
			freedB = time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if freedA == 0 || freedB == 0 {
		t.Fatalf("%v after the coordinator left: A holds %d QPs, B %d\nA:\n%s\nB:\n%s", bound, qpsOn(t, "rxe1"), qpsOn(t, "rxe0"), a.output(), b.output())
	}
	t.Logf("A freed its QPs %v after the coordinator left, B %v", freedA.Round(time.Millisecond), freedB.Round(time.Millisecond))
	if !strings.Contains(a.output(), "the coordinator went away") {
		t.Errorf("A's log does not say why the test stopped:\n%s", a.output())
	}
	relayed(t, a, b, coordinator(a), rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Iterations: 100})
}

// TestRelayedAuth: the coordinator needs the fleet's token, as any
// client does.
func TestRelayedAuth(t *testing.T) {
	a, b := fleetPair(t)
	cfg := coordinator(a)
	cfg.Token = "not-the-fleet-token"
	_, err := peer.RunVia(context.Background(), cfg, peer.Remote{Addr: b.addr}, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Iterations: 10}))
	var pe *peer.Error
	if !errors.Is(err, ctrl.ErrAuth) || !errors.As(err, &pe) || pe.Addr != a.addr || pe.Stage != peer.StageHandshake {
		t.Fatalf("wrong token: %v, want an auth error at A's handshake", err)
	}
	if strings.Contains(a.output(), fleetToken) || strings.Contains(b.output(), fleetToken) {
		t.Error("a serve logged the token")
	}
}

// TestRelayedTLS: with TLS on every hop, A dials B over TLS (--tls-ca).
func TestRelayedTLS(t *testing.T) {
	cert, key := testcert.Write(t, "10.0.0.1", "10.0.0.2")
	a, b := fleetPair(t, "--tls-cert", cert, "--tls-key", key, "--tls-ca", cert)
	tlsCfg, err := ctrl.TLSConfig{CAFile: cert}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg := coordinator(a)
	cfg.TLS = tlsCfg
	relayed(t, a, b, cfg, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Iterations: 100, Validate: true})
	if !strings.Contains(a.output(), `relay_to=`+b.addr) {
		t.Errorf("A's log does not show the relay\n%s", a.output())
	}
}

// TestRelayedHoldsASlot: A's outgoing test counts against its
// --max-concurrent: with one slot, a second request while a relay runs is
// told A is busy, and the first completes.
func TestRelayedHoldsASlot(t *testing.T) {
	a, b := fleetPair(t, "--max-concurrent", "1")
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Duration: rdma.Duration(4 * time.Second)})
	done := make(chan error, 1)
	go func() {
		// startServe's probe of A's port holds the one slot until A
		// has seen it close, which can be just after the probe returns.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, err := peer.RunVia(context.Background(), coordinator(a), peer.Remote{Addr: b.addr}, spec)
			if err == nil || !strings.Contains(err.Error(), "responder busy") || time.Now().After(deadline) {
				done <- err
				return
			}
		}
	}()
	for deadline := time.Now().Add(15 * time.Second); qpsOn(t, "rxe1") == 0; time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the first relay ended before it was seen running: %v\n%s", err, a.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first relay did not start within 15 s\n%s", a.output())
		}
	}
	_, err := peer.RunVia(context.Background(), coordinator(a), peer.Remote{Addr: b.addr}, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Iterations: 10}))
	if err == nil || !strings.Contains(err.Error(), "responder busy: 1 tests under way") {
		t.Errorf("a second relay while A's one slot is taken: %v, want busy", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the first relay: %v\nA:\n%s\nB:\n%s", err, a.output(), b.output())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first relay of 4 s did not end within 30 s")
	}
}
