//go:build testbed

// These tests run inside the soft-RoCE VM (make testbed-test), where
// testbed/guest-net.sh has made rxe0 on veth0 (10.0.0.1) and rxe1 on veth1
// (10.0.0.2). They drive the real rdma_rxe driver; outside the VM they
// fail rather than skip, so a run that lost its devices cannot pass.
package rdma

import (
	"context"
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

func newPair(t *testing.T, a, b string, spec TestSpec) *Pair {
	t.Helper()
	ca, cb := PairConfig(spec,
		EndpointConfig{Device: a, GIDIndex: AutoGIDIndex},
		EndpointConfig{Device: b, GIDIndex: AutoGIDIndex})
	p, err := NewLoopbackPair(ca, cb, spec.QP)
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

func run(t *testing.T, a, b string, spec TestSpec) *Result {
	t.Helper()
	p := newPair(t, a, b, spec)
	r, err := p.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	checkResult(t, r)
	return r
}

// checkResult asserts what must hold for any successful result.
func checkResult(t *testing.T, r *Result) {
	t.Helper()
	s := r.Spec
	if s.Measure == MeasureLatency {
		l := r.Latency
		if l == nil {
			t.Fatal("no latency stats")
		}
		if s.Duration == 0 && l.RTT.Count != s.Iterations*s.QPs {
			t.Errorf("%d samples, want %d", l.RTT.Count, s.Iterations*s.QPs)
		}
		if l.RTT.Count == 0 || l.RTT.Min <= 0 {
			t.Errorf("empty or zero latency: %+v", l.RTT)
		}
		if !(l.RTT.Min <= l.RTT.P50 && l.RTT.P50 <= l.RTT.P90 && l.RTT.P90 <= l.RTT.P99 && l.RTT.P99 <= l.RTT.P999 && l.RTT.P999 <= l.RTT.Max) {
			t.Errorf("percentiles out of order: %+v", l.RTT)
		}
		if (l.OneWay != nil) != s.Op.OneWay() {
			t.Errorf("one-way reported %v for %s", l.OneWay != nil, s.Op)
		}
		if l.OneWay != nil && l.OneWay.P50 != l.RTT.P50/2 {
			t.Errorf("one-way p50 %v is not RTT p50 %v / 2", l.OneWay.P50, l.RTT.P50)
		}
		if l.Histogram.TotalCount() != int64(l.RTT.Count) {
			t.Errorf("histogram holds %d samples, summary %d", l.Histogram.TotalCount(), l.RTT.Count)
		}
	} else {
		bw := r.Bandwidth
		want := 1
		if s.Bidirectional {
			want = 2
		}
		if bw == nil || len(bw.Directions) != want || len(bw.PerQP) != s.QPs {
			t.Fatalf("bandwidth stats %+v, want %d directions and %d QPs", bw, want, s.QPs)
		}
		for _, d := range bw.Directions {
			if s.Duration == 0 && d.Messages != uint64(s.Iterations*s.QPs) {
				t.Errorf("%s->%s: %d messages, want %d", d.From, d.To, d.Messages, s.Iterations*s.QPs)
			}
			if d.Messages == 0 || d.Bytes != d.Messages*uint64(s.Size) || d.Seconds <= 0 || d.BytesPerSecond <= 0 {
				t.Errorf("direction %+v", d)
			}
		}
		for i, per := range bw.PerQP {
			if len(per) != want || per[0].Messages == 0 {
				t.Errorf("QP %d: %+v", i, per)
			}
		}
	}
	// A worker sleeps on the channel only when its CQ is empty; rxe often
	// completes reads, atomics and writes within the post call itself, so
	// only a ping-pong, which waits for the peer, must have slept.
	if s.Mode == ModeEvent && s.Measure == MeasureLatency && s.Op.PingPong() && r.Events == 0 {
		t.Error("event mode consumed no completion events")
	}
	if s.Mode == ModeBusyPoll && r.Events != 0 {
		t.Errorf("busy-poll mode consumed %d events", r.Events)
	}
	if r.Elapsed <= 0 {
		t.Errorf("elapsed %v", r.Elapsed)
	}
}

var allOps = []Op{OpSend, OpSendImm, OpWrite, OpWriteImm, OpRead, OpFetchAdd, OpCmpSwap}

// TestMatrix runs every op x measure x mode on RC between rxe1 and rxe0,
// with data validation. The one impossible combination must be refused
// before anything runs.
func TestMatrix(t *testing.T) {
	testbedDevices(t)
	for _, op := range allOps {
		for _, m := range []Measure{MeasureLatency, MeasureBandwidth} {
			for _, mode := range []Mode{ModeBusyPoll, ModeEvent} {
				spec := TestSpec{Op: op, Measure: m, Mode: mode, Iterations: 200, Validate: true}
				if m == MeasureBandwidth && !op.Atomic() {
					spec.Size = 4096
				}
				t.Run(op.String()+"/"+m.String()+"/"+mode.String(), func(t *testing.T) {
					if op == OpWrite && m == MeasureLatency && mode == ModeEvent {
						if err := spec.WithDefaults().Check(); err == nil || !strings.Contains(err.Error(), "use op write_imm") {
							t.Fatalf("Check = %v, want a refusal naming write_imm", err)
						}
						return
					}
					r := run(t, "rxe1", "rxe0", spec)
					if m == MeasureLatency {
						t.Logf("RTT p50 %.1f us, p99 %.1f us", r.Latency.RTT.P50/1e3, r.Latency.RTT.P99/1e3)
					} else {
						d := r.Bandwidth.Directions[0]
						t.Logf("%s->%s %.4f Gb/s, %.0f msg/s", d.From, d.To, d.Gbps(), d.MessagesPerSec)
					}
				})
			}
		}
	}
}

// TestPayload checks that messages of several sizes arrive intact, on two
// devices and on one device to itself, one and two threads.
func TestPayload(t *testing.T) {
	testbedDevices(t)
	for _, pair := range [][2]string{{"rxe1", "rxe0"}, {"rxe0", "rxe0"}} {
		for _, op := range []Op{OpWrite, OpSend, OpRead} {
			for _, size := range []int{2, 4096, 65536} {
				t.Run(pair[0]+"-"+pair[1]+"/"+op.String()+"/"+strconv.Itoa(size), func(t *testing.T) {
					iters := 100
					if size > 4096 {
						iters = 20 // a 64 KiB round trip takes milliseconds under emulation
					}
					run(t, pair[0], pair[1], TestSpec{Op: op, Size: size, Iterations: iters, Validate: true})
				})
			}
		}
	}
}

func TestManyQPs(t *testing.T) {
	testbedDevices(t)
	for _, qps := range []int{1, 8} {
		for _, op := range []Op{OpWrite, OpSend} {
			for _, mode := range []Mode{ModeBusyPoll, ModeEvent} {
				t.Run(op.String()+"/"+mode.String()+"/qps"+strconv.Itoa(qps), func(t *testing.T) {
					threads := min(qps, 2)
					r := run(t, "rxe1", "rxe0", TestSpec{Op: op, Measure: MeasureBandwidth, Mode: mode, Size: 4096, Iterations: 100, QPs: qps, Threads: threads, Validate: true})
					t.Logf("%d QPs on %d threads: %.4f Gb/s", qps, threads, r.Bandwidth.Directions[0].Gbps())
				})
			}
		}
	}
	// Latency over several QPs takes turns between them.
	run(t, "rxe1", "rxe0", TestSpec{Op: OpSend, QPs: 4, Threads: 2, Iterations: 50, Validate: true})
	run(t, "rxe1", "rxe0", TestSpec{Op: OpFetchAdd, QPs: 3, Threads: 2, Iterations: 50, Validate: true})
}

func TestDuration(t *testing.T) {
	testbedDevices(t)
	for _, tc := range []TestSpec{
		{Op: OpWrite, Measure: MeasureLatency},
		{Op: OpSend, Measure: MeasureLatency, Mode: ModeEvent},
		{Op: OpWrite, Measure: MeasureBandwidth, Size: 4096},
		{Op: OpSend, Measure: MeasureBandwidth, Size: 4096, Mode: ModeEvent, QPs: 2},
	} {
		tc.Duration = Duration(time.Second)
		t.Run(tc.Op.String()+"/"+tc.Measure.String()+"/"+tc.Mode.String(), func(t *testing.T) {
			r := run(t, "rxe1", "rxe0", tc)
			if r.Elapsed < time.Second || r.Elapsed > 3*time.Second {
				t.Errorf("a 1 s run measured %v", r.Elapsed)
			}
			if tc.Measure == MeasureLatency {
				t.Logf("%d round trips, p99 %.1f us", r.Latency.RTT.Count, r.Latency.RTT.P99/1e3)
			} else {
				t.Logf("%d messages in %v", r.Bandwidth.Directions[0].Messages, r.Elapsed)
			}
		})
	}
}

func TestBidirectional(t *testing.T) {
	testbedDevices(t)
	for _, op := range []Op{OpWrite, OpSend, OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			r := run(t, "rxe1", "rxe0", TestSpec{Op: op, Measure: MeasureBandwidth, Bidirectional: true, Size: 4096, Iterations: 200, Validate: true})
			d := r.Bandwidth.Directions
			if d[0].From == d[1].From {
				t.Errorf("both directions from %s", d[0].From)
			}
		})
	}
}

func TestUC(t *testing.T) {
	testbedDevices(t)
	for _, op := range []Op{OpWrite, OpSend, OpWriteImm} {
		for _, m := range []Measure{MeasureLatency, MeasureBandwidth} {
			t.Run(op.String()+"/"+m.String(), func(t *testing.T) {
				run(t, "rxe1", "rxe0", TestSpec{Op: op, Measure: m, QPType: UC, Size: 1024, Iterations: 100, Validate: true})
			})
		}
	}
}

func TestEffectiveAttrs(t *testing.T) {
	testbedDevices(t)
	r := run(t, "rxe1", "rxe0", TestSpec{Op: OpWrite, Size: 64, Iterations: 10, QP: QPAttrs{MTU: 512, RetryCnt: 3, Timeout: 12}})
	want := DefaultQPAttrs()
	want.MTU, want.RetryCnt, want.Timeout = 512, 3, 12
	if r.Spec.QP != want {
		t.Errorf("effective attrs %+v, want %+v", r.Spec.QP, want)
	}
}

// TestPeerGoneCompletionError: the responder's QPs stop answering, and a
// finite retry count ends the run with RETRY_EXC_ERR from the driver.
func TestPeerGoneCompletionError(t *testing.T) {
	testbedDevices(t)
	for _, spec := range []TestSpec{
		{Op: OpWrite},
		{Op: OpWriteImm, Mode: ModeEvent},
		{Op: OpRead},
		{Op: OpSend, Measure: MeasureBandwidth, Size: 4096, Mode: ModeEvent},
	} {
		spec.Iterations = 10
		spec.StallTimeout = Duration(10 * time.Second)
		spec.QP = QPAttrs{RetryCnt: 1, Timeout: 8}
		t.Run(spec.Op.String()+"/"+spec.Measure.String()+"/"+spec.Mode.String(), func(t *testing.T) {
			p := newPair(t, "rxe1", "rxe0", spec)
			if err := p.Responder.Fail(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := p.Run(context.Background(), spec)
			took := time.Since(start)
			var ce *CompletionError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a CompletionError", err)
			}
			if ce.Status != WCRetryExcErr || ce.Device != "rxe1" || ce.QPN != p.Requester.Info().QPNs[0] {
				t.Errorf("got %+v, want RETRY_EXC_ERR on rxe1's QP", ce)
			}
			if !strings.Contains(err.Error(), "likely cause") || took > 5*time.Second {
				t.Errorf("error %q after %v", err, took)
			}
			t.Logf("after %v: %v", took, err)
		})
	}
}

// TestPeerGoneStall: with retry_cnt 7, which rxe treats as "retry
// forever", the driver never reports an error; the loop's own deadline
// must end the run, in busy-poll and in event mode.
func TestPeerGoneStall(t *testing.T) {
	testbedDevices(t)
	for _, spec := range []TestSpec{
		{Op: OpWrite},
		{Op: OpSend, Mode: ModeEvent},
		{Op: OpWrite, Measure: MeasureBandwidth, Size: 4096, Mode: ModeEvent, QPs: 4, Threads: 2},
	} {
		spec.Iterations = 10
		spec.StallTimeout = Duration(time.Second)
		spec.QP = QPAttrs{RetryCnt: 7, Timeout: 8}
		t.Run(spec.Op.String()+"/"+spec.Measure.String()+"/"+spec.Mode.String(), func(t *testing.T) {
			p := newPair(t, "rxe1", "rxe0", spec)
			if err := p.Responder.Fail(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := p.Run(context.Background(), spec)
			took := time.Since(start)
			var se *StallError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a StallError", err)
			}
			if took < time.Second || took > 3*time.Second {
				t.Errorf("stall reported after %v, want about 1s", took)
			}
			t.Logf("after %v: %v", took, err)
		})
	}
}

// TestCancel: a context cancelled mid-run ends a long run promptly.
func TestCancel(t *testing.T) {
	testbedDevices(t)
	for _, mode := range []Mode{ModeBusyPoll, ModeEvent} {
		t.Run(mode.String(), func(t *testing.T) {
			spec := TestSpec{Op: OpSend, Measure: MeasureBandwidth, Mode: mode, Size: 4096, Duration: Duration(time.Minute)}
			p := newPair(t, "rxe1", "rxe0", spec)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Run(ctx, spec)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want the context's error", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("stopped after %v", took)
			}
			// The pair stays usable... or at least closes cleanly: the
			// cleanup registered by newPair checks Close.
		})
	}
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
		spec := TestSpec{Op: allOps[i%len(allOps)], Iterations: 5, QPs: 1 + i%3, Mode: Mode(i % 2), StallTimeout: Duration(2 * time.Second), QP: QPAttrs{RetryCnt: 1, Timeout: 8}}
		if spec.Op == OpWrite {
			spec.Mode = ModeBusyPoll
		}
		ca, cb := PairConfig(spec, EndpointConfig{Device: "rxe1", GIDIndex: AutoGIDIndex}, EndpointConfig{Device: "rxe0", GIDIndex: AutoGIDIndex})
		p, err := NewLoopbackPair(ca, cb, spec.QP)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			_ = p.Responder.Fail()
		}
		_, _ = p.Run(context.Background(), spec)
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	// A constructor that fails half-way (rxe's queues are smaller than
	// this) must free what it made too.
	_, err := NewEndpoint(EndpointConfig{Device: "rxe0", GIDIndex: AutoGIDIndex, MaxMessage: 64, QPs: 2, Channels: 1, SQDepth: 1 << 15})
	var ve *VerbsError
	if !errors.As(err, &ve) {
		t.Fatalf("oversized queues: got %v, want a VerbsError", err)
	}
	t.Logf("oversized queues: %v", err)
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
