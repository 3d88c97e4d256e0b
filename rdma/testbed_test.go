//go:build testbed

// These tests run inside the soft-RoCE VM (make testbed-test), where
// testbed/guest-net.sh has made rxe0 on veth0 (10.0.0.1) and rxe1 on veth1
// (10.0.0.2). They drive the real rdma_rxe driver; outside the VM they
// fail rather than skip, so a run that lost its devices cannot pass.
package rdma_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

func testbedDevices(t *testing.T) map[string]rdma.Device {
	t.Helper()
	devs, err := rdma.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	m := map[string]rdma.Device{}
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
		g, err := p.SelectGID(rdma.AutoGIDIndex)
		if err != nil {
			t.Fatal(err)
		}
		if g.Type != rdma.GIDTypeRoCEv2 || g.GID.String() != want.ip || g.Netdev != want.netdev {
			t.Errorf("%s auto GID = %+v, want RoCE v2 %s on %s", name, g, want.ip, want.netdev)
		}
		t.Logf("%s: %s, MTU %d, %v Gb/s, auto GID %d %s", name, p.State, p.ActiveMTU, p.RateGbps, g.Index, g.GID)
	}
}

func newPair(t *testing.T, a, b string, s rdma.TestSpec) *rdma.Pair {
	t.Helper()
	spec := rdmatest.Complete(t, s)
	ca, cb := rdma.PairConfig(spec,
		rdma.EndpointConfig{Device: a, GIDIndex: rdma.AutoGIDIndex},
		rdma.EndpointConfig{Device: b, GIDIndex: rdma.AutoGIDIndex})
	p, err := rdma.NewLoopbackPair(ca, cb, spec.QP)
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

func run(t *testing.T, a, b string, spec rdma.TestSpec) *rdma.Result {
	t.Helper()
	p := newPair(t, a, b, spec)
	r, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	rdmatest.CheckResult(t, r)
	return r
}

var allOps = []rdma.Op{rdma.OpSend, rdma.OpSendImm, rdma.OpWrite, rdma.OpWriteImm, rdma.OpRead, rdma.OpFetchAdd, rdma.OpCmpSwap}

// TestMatrix runs every op x measure x mode on rdma.RC between rxe1 and rxe0,
// with data validation. The one impossible combination must be refused
// before anything runs.
func TestMatrix(t *testing.T) {
	testbedDevices(t)
	for _, op := range allOps {
		for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
			for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
				spec := rdma.TestSpec{Op: op, Measure: m, Mode: mode, Iterations: 200, Validate: true}
				if m == rdma.MeasureBandwidth && !op.Atomic() {
					spec.Size = 4096
				}
				t.Run(op.String()+"/"+m.String()+"/"+mode.String(), func(t *testing.T) {
					if op == rdma.OpWrite && m == rdma.MeasureLatency && mode == rdma.ModeEvent {
						if _, err := spec.Complete(); err == nil || !strings.Contains(err.Error(), "use op write_imm") {
							t.Fatalf("Check = %v, want a refusal naming write_imm", err)
						}
						return
					}
					r := run(t, "rxe1", "rxe0", spec)
					if m == rdma.MeasureLatency {
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
		for _, op := range []rdma.Op{rdma.OpWrite, rdma.OpSend, rdma.OpRead} {
			for _, size := range []int{2, 4096, 65536} {
				t.Run(pair[0]+"-"+pair[1]+"/"+op.String()+"/"+strconv.Itoa(size), func(t *testing.T) {
					iters := 100
					if size > 4096 {
						iters = 20 // a 64 KiB round trip takes milliseconds under emulation
					}
					run(t, pair[0], pair[1], rdma.TestSpec{Op: op, Size: size, Iterations: iters, Validate: true})
				})
			}
		}
	}
}

func TestManyQPs(t *testing.T) {
	testbedDevices(t)
	for _, qps := range []int{1, 8} {
		for _, op := range []rdma.Op{rdma.OpWrite, rdma.OpSend} {
			for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
				t.Run(op.String()+"/"+mode.String()+"/qps"+strconv.Itoa(qps), func(t *testing.T) {
					threads := min(qps, 2)
					r := run(t, "rxe1", "rxe0", rdma.TestSpec{Op: op, Measure: rdma.MeasureBandwidth, Mode: mode, Size: 4096, Iterations: 100, QPs: qps, Threads: threads, Validate: true})
					t.Logf("%d QPs on %d threads: %.4f Gb/s", qps, threads, r.Bandwidth.Directions[0].Gbps())
				})
			}
		}
	}
	// Latency over several QPs takes turns between them.
	run(t, "rxe1", "rxe0", rdma.TestSpec{Op: rdma.OpSend, QPs: 4, Threads: 2, Iterations: 50, Validate: true})
	run(t, "rxe1", "rxe0", rdma.TestSpec{Op: rdma.OpFetchAdd, QPs: 3, Threads: 2, Iterations: 50, Validate: true})
}

func TestDuration(t *testing.T) {
	testbedDevices(t)
	for _, tc := range []rdma.TestSpec{
		{Op: rdma.OpWrite, Measure: rdma.MeasureLatency},
		{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Mode: rdma.ModeEvent},
		{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096},
		{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 4096, Mode: rdma.ModeEvent, QPs: 2},
	} {
		tc.Duration = rdma.Duration(time.Second)
		t.Run(tc.Op.String()+"/"+tc.Measure.String()+"/"+tc.Mode.String(), func(t *testing.T) {
			r := run(t, "rxe1", "rxe0", tc)
			if r.Elapsed < time.Second || r.Elapsed > 3*time.Second {
				t.Errorf("a 1 s run measured %v", r.Elapsed)
			}
			if tc.Measure == rdma.MeasureLatency {
				t.Logf("%d round trips, p99 %.1f us", r.Latency.RTT.Count, r.Latency.RTT.P99/1e3)
			} else {
				t.Logf("%d messages in %v", r.Bandwidth.Directions[0].Messages, r.Elapsed)
			}
		})
	}
}

func TestBidirectional(t *testing.T) {
	testbedDevices(t)
	for _, op := range []rdma.Op{rdma.OpWrite, rdma.OpSend, rdma.OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			r := run(t, "rxe1", "rxe0", rdma.TestSpec{Op: op, Measure: rdma.MeasureBandwidth, Bidirectional: true, Size: 4096, Iterations: 200, Validate: true})
			d := r.Bandwidth.Directions
			if d[0].From == d[1].From {
				t.Errorf("both directions from %s", d[0].From)
			}
		})
	}
}

func TestUC(t *testing.T) {
	testbedDevices(t)
	for _, op := range []rdma.Op{rdma.OpWrite, rdma.OpSend, rdma.OpWriteImm} {
		for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
			t.Run(op.String()+"/"+m.String(), func(t *testing.T) {
				run(t, "rxe1", "rxe0", rdma.TestSpec{Op: op, Measure: m, QPType: rdma.UC, Size: 1024, Iterations: 100, Validate: true})
			})
		}
	}
}

// TestHugepages reserves huge pages in the VM and runs on buffers backed
// by them; without a reservation the error says how to make one.
func TestHugepages(t *testing.T) {
	testbedDevices(t)
	spec := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 65536, Iterations: 50, QPs: 2, Hugepages: true, Validate: true}
	if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := rdma.NewEndpoint(rdma.SpecConfig(rdmatest.Complete(t, spec), rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex}))
	if err == nil || !strings.Contains(err.Error(), "/proc/sys/vm/nr_hugepages") {
		t.Fatalf("without reserved huge pages: got %v", err)
	}
	if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("8"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("0"), 0o644)
	r := run(t, "rxe1", "rxe0", spec)
	if !r.Spec.Hugepages {
		t.Error("result does not record huge pages")
	}
}

// TestReusedPair runs many tests on one pair, as a size sweep does: the
// receives a run leaves posted must neither overflow the queue nor be too
// small for the next run's larger messages.
func TestReusedPair(t *testing.T) {
	testbedDevices(t)
	big := rdma.TestSpec{Op: rdma.OpSend, Size: 8192}
	p := newPair(t, "rxe1", "rxe0", big)
	for i, spec := range []rdma.TestSpec{
		{Op: rdma.OpSend, Size: 2}, {Op: rdma.OpSend, Size: 64}, {Op: rdma.OpSendImm, Size: 8192},
		{Op: rdma.OpWriteImm, Size: 2}, {Op: rdma.OpSend, Size: 4096}, {Op: rdma.OpSend, Size: 8192},
	} {
		spec.Iterations, spec.Validate = 50, true
		r, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
		if err != nil {
			t.Fatalf("run %d (%s %d B): %v", i, spec.Op, spec.Size, err)
		}
		rdmatest.CheckResult(t, r)
	}
}

func TestEffectiveAttrs(t *testing.T) {
	testbedDevices(t)
	r := run(t, "rxe1", "rxe0", rdma.TestSpec{Op: rdma.OpWrite, Size: 64, Iterations: 10, QP: rdma.QPSettings{MTU: new(512), RetryCnt: new(3), Timeout: new(12)}})
	want := rdma.DefaultQPAttrs()
	want.MTU, want.RetryCnt, want.Timeout = 512, 3, 12
	if r.Spec.QP != want {
		t.Errorf("effective attrs %+v, want %+v", r.Spec.QP, want)
	}
}

// TestPeerGoneCompletionError: the responder's QPs stop answering, and a
// finite retry count ends the run with a completion error from the driver.
// runAgainstGonePeer moves the responder's QPs to the error state, so
// they stop answering, and runs spec; it returns the pair, how long the
// run took and how it failed.
func runAgainstGonePeer(t *testing.T, spec rdma.TestSpec) (*rdma.Pair, time.Duration, error) {
	t.Helper()
	p := newPair(t, "rxe1", "rxe0", spec)
	if err := p.Responder.Fail(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
	return p, time.Since(start), err
}

func TestPeerGoneCompletionError(t *testing.T) {
	testbedDevices(t)
	for _, spec := range []rdma.TestSpec{
		{Op: rdma.OpWrite},
		{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent},
		{Op: rdma.OpRead},
		{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 4096, Mode: rdma.ModeEvent},
	} {
		spec.Iterations = 10
		spec.StallTimeout = rdma.Duration(10 * time.Second)
		spec.QP = rdma.QPSettings{RetryCnt: new(1), Timeout: new(8)}
		t.Run(spec.Op.String()+"/"+spec.Measure.String()+"/"+spec.Mode.String(), func(t *testing.T) {
			p, took, err := runAgainstGonePeer(t, spec)
			var ce *rdma.CompletionError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a rdma.CompletionError", err)
			}
			// Either end may report first. The requester's QP gives up
			// with RETRY_EXC_ERR; a responder with receives posted (the
			// write_imm ping-pong) can see them flushed on the QP that was
			// put in error before that, and the pair then stops the requester.
			// Both name the failure; nothing else may.
			retryExc := ce.Status == rdma.WCRetryExcErr && ce.Device == "rxe1" && ce.QPN == p.Requester.Info().QPNs[0]
			flushed := ce.Status == rdma.WCWRFlushErr && ce.Device == "rxe0" && ce.QPN == p.Responder.Info().QPNs[0]
			if !retryExc && !flushed {
				t.Errorf("got %+v, want RETRY_EXC_ERR on rxe1's QP, or WR_FLUSH_ERR on rxe0's QP in error", ce)
			}
			if !strings.Contains(err.Error(), "likely cause") || took > 5*time.Second {
				t.Errorf("error %q after %v", err, took)
			}
			t.Logf("after %v: %v", took, err)
		})
	}
}

// runRequesterAlone is runAgainstGonePeer with no responder side running
// at all, as when the peer's process is gone: nothing polls the failed
// QP's CQ, so its flushed receives (WR_FLUSH_ERR, which a loaded host
// showed before the stall deadline) cannot end the run first.
func runRequesterAlone(t *testing.T, spec rdma.TestSpec) (time.Duration, error) {
	t.Helper()
	p := newPair(t, "rxe1", "rxe0", spec)
	if err := p.Responder.Fail(); err != nil {
		t.Fatal(err)
	}
	test := rdmatest.Complete(t, spec)
	role, _ := rdma.Roles(test)
	side, err := p.Requester.Prepare(test, 0, role, p.Responder.Info())
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	start := time.Now()
	side.Start()
	select {
	case <-side.Exited():
	case <-time.After(10 * time.Second):
		side.Stop()
		t.Fatalf("the requester alone still running after 10 s")
	}
	_, err = side.Result()
	return time.Since(start), err
}

// TestPeerGoneStall: with retry_cnt 7, which rxe treats as "retry
// forever", the driver never reports an error; the loop's own deadline
// must end the run, in busy-poll and in event mode.
func TestPeerGoneStall(t *testing.T) {
	testbedDevices(t)
	for _, spec := range []rdma.TestSpec{
		{Op: rdma.OpWrite},
		{Op: rdma.OpSend, Mode: rdma.ModeEvent},
		{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Mode: rdma.ModeEvent, QPs: 4, Threads: 2},
	} {
		spec.Iterations = 10
		spec.StallTimeout = rdma.Duration(time.Second)
		spec.QP = rdma.QPSettings{RetryCnt: new(7), Timeout: new(8)}
		t.Run(spec.Op.String()+"/"+spec.Measure.String()+"/"+spec.Mode.String(), func(t *testing.T) {
			took, err := runRequesterAlone(t, spec)
			var se *rdma.StallError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a rdma.StallError", err)
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
	for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
		t.Run(mode.String(), func(t *testing.T) {
			spec := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Mode: mode, Size: 4096, Duration: rdma.Duration(time.Minute)}
			p := newPair(t, "rxe1", "rxe0", spec)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Run(ctx, rdmatest.Complete(t, spec))
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
		spec := rdma.TestSpec{Op: allOps[i%len(allOps)], Iterations: 5, QPs: 1 + i%3, Mode: rdma.Mode(i % 2), StallTimeout: rdma.Duration(2 * time.Second), QP: rdma.QPSettings{RetryCnt: new(1), Timeout: new(8)}}
		if spec.Op == rdma.OpWrite {
			spec.Mode = rdma.ModeBusyPoll
		}
		test := rdmatest.Complete(t, spec)
		ca, cb := rdma.PairConfig(test, rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex}, rdma.EndpointConfig{Device: "rxe0", GIDIndex: rdma.AutoGIDIndex})
		p, err := rdma.NewLoopbackPair(ca, cb, test.QP)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			_ = p.Responder.Fail()
		}
		_, _ = p.Run(context.Background(), test)
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	// A constructor that fails half-way must free what it made too: rxe
	// takes far less inline data than this, so its first QP fails after
	// the PD, the MR, the channel and a CQ exist. (Queues above the
	// device's limits no longer reach the driver: DeviceLimits refuses
	// them before anything is made.)
	_, err := rdma.NewEndpoint(rdma.EndpointConfig{Device: "rxe0", GIDIndex: rdma.AutoGIDIndex, MaxMessage: 64, QPs: 2, Channels: 1, SQDepth: 16, RQDepth: 512, MaxInline: 1 << 16})
	var ve *rdma.VerbsError
	if !errors.As(err, &ve) || ve.Op != "ibv_create_qp" {
		t.Fatalf("oversized inline data: got %v, want a rdma.VerbsError from ibv_create_qp", err)
	}
	t.Logf("oversized inline data: %v", err)
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
	_, err := rdma.NewEndpoint(rdma.EndpointConfig{Device: "mlx9_9", GIDIndex: rdma.AutoGIDIndex, MaxMessage: 64, QPs: 1, SQDepth: 16, RQDepth: 16})
	if err == nil || !strings.Contains(err.Error(), `no device named "mlx9_9"`) {
		t.Fatalf("got %v", err)
	}
}

// TestSideNeverStarted: a side prepared and then closed without a start,
// as when the peer goes away between the two, closes at once and frees
// what it holds; its result is an error, not a wait for workers that
// never ran.
func TestSideNeverStarted(t *testing.T) {
	testbedDevices(t)
	for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
		spec := rdma.TestSpec{Op: rdma.OpWriteImm, Iterations: 10, Mode: mode}
		p := newPair(t, "rxe1", "rxe0", spec)
		test := rdmatest.Complete(t, spec)
		role, _ := rdma.Roles(test)
		side, err := p.Requester.Prepare(test, 0, role, p.Responder.Info())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := side.Result()
			side.Close()
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: Result of a side never started: no error", mode)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Result and Close of a side never started still waiting after 5 s", mode)
		}
	}
}

// TestRoundTripsFillElapsed: the round trips a latency run times (with the
// TSC where the loop may use it) add up to no more than the measured part
// of the run on CLOCK_MONOTONIC, and to most of it, since the loop does
// little else between round trips (under 1% of the run in the testbed). A
// cycle counter calibrated too fast by more than that share fails the
// upper bound, one grossly too slow the lower; TestLatencyClockAgrees-
// WithMonotonic holds the calibration itself to 0.1%.
func TestRoundTripsFillElapsed(t *testing.T) {
	testbedDevices(t)
	for _, op := range []rdma.Op{rdma.OpWrite, rdma.OpSend, rdma.OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			r := run(t, "rxe1", "rxe0", rdma.TestSpec{Op: op, Iterations: 2000})
			rtt := r.Latency.RTT
			if rtt.Count != 2000 {
				t.Fatalf("%d round trips timed, want 2000", rtt.Count)
			}
			sum, elapsed := rtt.Mean*float64(rtt.Count), float64(r.Elapsed)
			t.Logf("round trips add up to %.0f ns of %.0f ns measured (%.2f%%)", sum, elapsed, 100*sum/elapsed)
			if sum > elapsed*1.001 || sum < elapsed*0.8 {
				t.Errorf("round trips add up to %.0f ns, the measured part of the run is %.0f ns: want 80%% to 100.1%% of it", sum, elapsed)
			}
		})
	}
}
