//go:build testbed

// These tests run inside the soft-RoCE VM (make testbed-test), where
// testbed/guest-net.sh has made rxe0 on veth0 (10.0.0.1) and rxe1 on veth1
// (10.0.0.2). They drive the real rdma_rxe driver; outside the VM they
// fail rather than skip, so a run that lost its devices cannot pass.
package rdma

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testbedDevices(t *testing.T) map[string]Device {
	t.Helper()
	devs, err := Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	m := map[string]Device{}
	for _, d := range devs {
		m[d.Name] = d
	}
	for _, name := range []string{"rxe0", "rxe1"} {
		if _, ok := m[name]; !ok {
			t.Fatalf("no %s among %v: not inside the testbed VM?", name, devs)
		}
	}
	return m
}

func TestTestbedDevices(t *testing.T) {
	devs := testbedDevices(t)
	for name, want := range map[string]struct{ netdev, ip string }{
		"rxe0": {"veth0", "::ffff:10.0.0.1"},
		"rxe1": {"veth1", "::ffff:10.0.0.2"},
	} {
		d := devs[name]
		if d.Driver != "rdma_rxe" || d.Parent != want.netdev {
			t.Errorf("%s: driver %q parent %q, want rdma_rxe on %s", name, d.Driver, d.Parent, want.netdev)
		}
		p, err := d.Port(1)
		if err != nil {
			t.Fatal(err)
		}
		if p.State != "ACTIVE" || p.LinkLayer != "Ethernet" || p.ActiveMTU < 256 || p.RateGbps <= 0 {
			t.Errorf("%s port 1: %+v, want ACTIVE Ethernet with an MTU and a rate", name, *p)
		}
		g, err := p.SelectGID(AutoGIDIndex)
		if err != nil {
			t.Fatal(err)
		}
		if g.Type != GIDTypeRoCEv2 || g.GID.String() != want.ip || g.Netdev != want.netdev {
			t.Errorf("%s auto GID = %+v, want RoCE v2 %s on %s", name, g, want.ip, want.netdev)
		}
		t.Logf("%s: %s, MTU %d, %v Gb/s, auto GID %d %s", name, p.State, p.ActiveMTU, p.RateGbps, g.Index, g.GID)
	}
}

func newPair(t *testing.T, a, b string, maxMsg int, attrs QPAttrs) *Pair {
	t.Helper()
	p, err := NewLoopbackPair(
		EndpointConfig{Device: a, GIDIndex: AutoGIDIndex, MaxMessage: maxMsg},
		EndpointConfig{Device: b, GIDIndex: AutoGIDIndex, MaxMessage: maxMsg},
		attrs)
	if err != nil {
		t.Fatalf("NewLoopbackPair(%s, %s): %v", a, b, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func checkLatency(t *testing.T, r *LatencyResult, iters int) {
	t.Helper()
	if len(r.Samples) != iters || r.RTT.Count != iters {
		t.Fatalf("%d samples, summary of %d, want %d", len(r.Samples), r.RTT.Count, iters)
	}
	for i, s := range r.Samples {
		if s == 0 {
			t.Fatalf("sample %d is 0 ns", i)
		}
	}
	if !(r.RTT.Min <= r.RTT.P50 && r.RTT.P50 <= r.RTT.P99 && r.RTT.P99 <= r.RTT.Max) {
		t.Errorf("percentiles out of order: %+v", r.RTT)
	}
	if r.OneWay.P50 != r.RTT.P50/2 {
		t.Errorf("one-way p50 %v is not RTT p50 %v / 2", r.OneWay.P50, r.RTT.P50)
	}
	if r.Elapsed <= 0 {
		t.Errorf("elapsed %v", r.Elapsed)
	}
}

// TestWriteLatencyPayload runs the ping-pong on two devices and on one
// device to itself, and checks that what each side wrote arrived intact.
func TestWriteLatencyPayload(t *testing.T) {
	testbedDevices(t)
	for _, tc := range []struct {
		a, b    string
		threads int
	}{{"rxe1", "rxe0", 2}, {"rxe1", "rxe0", 1}, {"rxe0", "rxe0", 2}} {
		for _, size := range []int{2, 64, 4096, 65536} {
			t.Run(tc.a+"-"+tc.b+"-threads"+strconv.Itoa(tc.threads)+"-"+strconv.Itoa(size), func(t *testing.T) {
				p := newPair(t, tc.a, tc.b, size, QPAttrs{})
				for _, ep := range []*Endpoint{p.Requester, p.Responder} {
					if _, err := rand.Read(ep.SendArea()); err != nil {
						t.Fatal(err)
					}
				}
				iters := 200
				if size > 4096 {
					iters = 30 // a 64 KiB round trip takes milliseconds under emulation
				}
				r, err := p.WriteLatency(LatencyOptions{Size: size, Iterations: iters, Warmup: 10, Threads: tc.threads})
				if err != nil {
					t.Fatal(err)
				}
				checkLatency(t, r, iters)
				if r.Threads != tc.threads {
					t.Errorf("result says %d threads, ran %d", r.Threads, tc.threads)
				}
				if r.Inline != (size <= p.Requester.Info().MaxInline) {
					t.Errorf("inline %v for size %d with max inline %d", r.Inline, size, p.Requester.Info().MaxInline)
				}
				for _, dir := range []struct {
					name     string
					from, to *Endpoint
				}{{"requester->responder", p.Requester, p.Responder}, {"responder->requester", p.Responder, p.Requester}} {
					if !bytes.Equal(dir.from.SendArea()[:size], dir.to.RecvArea()[:size]) {
						t.Errorf("%s: payload differs after the run", dir.name)
					}
				}
				t.Logf("%s->%s %d B: RTT min %.1f p50 %.1f p99 %.1f us", tc.a, tc.b, size, r.RTT.Min/1e3, r.RTT.P50/1e3, r.RTT.P99/1e3)
			})
		}
	}
}

// TestWriteLatencyRepeatable reuses one pair for several runs: sequence
// bytes left over from an earlier run must not end a later one early.
func TestWriteLatencyRepeatable(t *testing.T) {
	testbedDevices(t)
	p := newPair(t, "rxe1", "rxe0", 4096, QPAttrs{})
	for _, size := range []int{2, 4096, 2, 300} {
		r, err := p.WriteLatency(LatencyOptions{Size: size, Iterations: 100})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		checkLatency(t, r, 100)
	}
}

func TestWriteLatencyEffectiveAttrs(t *testing.T) {
	testbedDevices(t)
	p := newPair(t, "rxe1", "rxe0", 64, QPAttrs{MTU: 512, RetryCnt: 3, Timeout: 12})
	r, err := p.WriteLatency(LatencyOptions{Size: 64, Iterations: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultQPAttrs()
	want.MTU, want.RetryCnt, want.Timeout = 512, 3, 12
	if r.QP != want {
		t.Errorf("effective attrs %+v, want %+v", r.QP, want)
	}
}

// TestPeerGoneCompletionError: the responder's QP stops answering, and a
// finite retry count ends the run with RETRY_EXC_ERR from the driver.
func TestPeerGoneCompletionError(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run("threads"+strconv.Itoa(threads), func(t *testing.T) { peerGoneCompletionError(t, threads) })
	}
}

func peerGoneCompletionError(t *testing.T, threads int) {
	testbedDevices(t)
	p := newPair(t, "rxe1", "rxe0", 64, QPAttrs{RetryCnt: 1, Timeout: 8})
	if err := p.Responder.Fail(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := p.WriteLatency(LatencyOptions{Size: 64, Iterations: 10, StallTimeout: 10 * time.Second, Threads: threads})
	took := time.Since(start)
	var ce *CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a CompletionError", err)
	}
	if ce.Status != WCRetryExcErr || ce.Device != "rxe1" || ce.QPN != p.Requester.Info().QPN {
		t.Errorf("got %+v, want RETRY_EXC_ERR on rxe1's QP", ce)
	}
	if !strings.Contains(err.Error(), "likely cause") || took > 5*time.Second {
		t.Errorf("error %q after %v", err, took)
	}
	t.Logf("after %v: %v", took, err)
}

// TestPeerGoneStall: with retry_cnt 7, which rxe treats as "retry
// forever", the driver never reports an error; the loop's own deadline
// must end the run.
func TestPeerGoneStall(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run("threads"+strconv.Itoa(threads), func(t *testing.T) { peerGoneStall(t, threads) })
	}
}

func peerGoneStall(t *testing.T, threads int) {
	testbedDevices(t)
	p := newPair(t, "rxe1", "rxe0", 64, QPAttrs{RetryCnt: 7, Timeout: 8})
	if err := p.Responder.Fail(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := p.WriteLatency(LatencyOptions{Size: 64, Iterations: 10, StallTimeout: time.Second, Threads: threads})
	took := time.Since(start)
	var se *StallError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a StallError", err)
	}
	if took < time.Second || took > 3*time.Second {
		t.Errorf("stall reported after %v, want about 1s", took)
	}
	t.Logf("after %v: %v", took, err)
}

var resLine = regexp.MustCompile(`(\w+): pd (\d+) cq (\d+) qp (\d+) cm_id \d+ mr (\d+)`)

// rdmaResources returns the kernel's count of PDs, CQs, QPs and MRs per
// device, from `rdma resource show`.
func rdmaResources(t *testing.T) map[string][4]int {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v: %s", err, out)
	}
	m := map[string][4]int{}
	for _, l := range resLine.FindAllStringSubmatch(string(out), -1) {
		var v [4]int
		for i := range v {
			v[i], _ = strconv.Atoi(l[i+2])
		}
		m[l[1]] = v
	}
	if len(m) == 0 {
		t.Fatalf("no resource lines in %q", out)
	}
	return m
}

// TestCloseFreesEverything builds and closes pairs, some after a failed
// run, and checks with the kernel that no PD, CQ, QP or MR is left.
func TestCloseFreesEverything(t *testing.T) {
	testbedDevices(t)
	before := rdmaResources(t)
	for i := range 10 {
		p, err := NewLoopbackPair(
			EndpointConfig{Device: "rxe1", GIDIndex: AutoGIDIndex, MaxMessage: 4096},
			EndpointConfig{Device: "rxe0", GIDIndex: AutoGIDIndex, MaxMessage: 4096},
			QPAttrs{RetryCnt: 1, Timeout: 8})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			_ = p.Responder.Fail()
		}
		_, _ = p.WriteLatency(LatencyOptions{Size: 8, Iterations: 5, StallTimeout: 2 * time.Second})
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	// A failed constructor must free what it made too.
	if _, err := NewEndpoint(EndpointConfig{Device: "rxe0", GIDIndex: 99, MaxMessage: 64}); err == nil {
		t.Fatal("GID index 99 accepted")
	}
	after := rdmaResources(t)
	for dev, b := range before {
		if after[dev] != b {
			t.Errorf("%s: pd/cq/qp/mr %v before, %v after", dev, b, after[dev])
		}
	}
	t.Logf("resources before and after: %v", after)
}

func TestUnknownDevice(t *testing.T) {
	testbedDevices(t)
	_, err := NewEndpoint(EndpointConfig{Device: "mlx9_9", GIDIndex: AutoGIDIndex, MaxMessage: 64})
	if err == nil || !strings.Contains(err.Error(), `no device named "mlx9_9"`) {
		t.Fatalf("got %v", err)
	}
}
