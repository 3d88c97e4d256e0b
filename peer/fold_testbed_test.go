//go:build testbed

package peer_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// frameCount counts the run messages that pass a frameProxy.
type frameCount struct {
	mu sync.Mutex
	n  map[ctrl.Kind]int
}

func (f *frameCount) rewrite(k ctrl.Kind, p []byte) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[ctrl.Kind]int{}
	}
	f.n[k]++
	return p
}

func (f *frameCount) get(k ctrl.Kind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[k]
}

// withoutFolded plays a peer from before folding: the client's spec
// does not ask for it, so the responder neither folds nor says it does,
// which is also what a responder from before folding answers.
func withoutFolded(t *testing.T, next func(ctrl.Kind, []byte) []byte) func(ctrl.Kind, []byte) []byte {
	return func(k ctrl.Kind, p []byte) []byte {
		if k == ctrl.KindSpec {
			var ok map[string]any
			if err := json.Unmarshal(p, &ok); err != nil {
				t.Errorf("spec %s: %v", p, err)
			}
			delete(ok, "folded")
			p, _ = json.Marshal(ok)
		}
		return next(k, p)
	}
}

// TestSessionFolded: a kept ping-pong latency session without counters
// runs folded: after the first run, a run is the client's Ready and the
// responder's Result (and its Start, in busy-poll mode), and no Done
// crosses either way; every run's result is whole. With a peer from
// before folding (no "folded" asked or granted) the same runs take the
// unfolded exchange, five messages each.
func TestSessionFolded(t *testing.T) {
	r := startResponder(t)
	const runs = 8
	for _, tc := range []struct {
		name   string
		spec   rdma.TestSpec
		folded bool
	}{
		{"write_imm event", rdma.TestSpec{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Iterations: 10}, true},
		{"write busy_poll", rdma.TestSpec{Op: rdma.OpWrite, Mode: rdma.ModeBusyPoll, Iterations: 10}, true},
		{"send event", rdma.TestSpec{Op: rdma.OpSend, Mode: rdma.ModeEvent, Iterations: 10, QPs: 2}, true},
		{"write_imm event, a peer from before folding", rdma.TestSpec{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Iterations: 10}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base0, base1 := qpsOn(t, "rxe0"), qpsOn(t, "rxe1")
			var toServer, toClient frameCount
			fromClient := toServer.rewrite
			if !tc.folded {
				fromClient = withoutFolded(t, toServer.rewrite)
			}
			cc := client(r)
			cc.Addr = frameProxy(t, r.addr, fromClient, toClient.rewrite)
			cc.SkipPortCounters = true
			spec := rdmatest.Complete(t, tc.spec)
			s, err := peer.Dial(context.Background(), cc, spec, time.Minute)
			if err != nil {
				t.Fatalf("dial: %v\n%s", err, r.output())
			}
			// Closed on every path: a session left open holds the
			// proxy's connections until the responder idles it out.
			defer s.Close()
			for i := range runs {
				res, err := s.Run(context.Background())
				if err != nil {
					t.Fatalf("run %d: %v\n%s", i+1, err, r.output())
				}
				rdmatest.CheckResult(t, res)
				if got, want := res.Latency.RTT.Count, 10*spec.QPs; got != want {
					t.Errorf("run %d: %d round trips, want %d", i+1, got, want)
				}
			}
			s.Close()
			waitQPs(t, "rxe0", base0, "after Close, the responder's")
			waitQPs(t, "rxe1", base1, "after Close, the client's")
			ready, start, result := toServer.get(ctrl.KindReady), toClient.get(ctrl.KindStart), toClient.get(ctrl.KindResult)
			done := toServer.get(ctrl.KindDone) + toClient.get(ctrl.KindDone)
			t.Logf("%d runs: %d ready, %d start, %d done, %d result", runs, ready, start, done, result)
			wantStart, wantDone := 1, 0
			switch {
			case !tc.folded:
				wantStart, wantDone = runs, 2*runs
			case spec.Mode == rdma.ModeBusyPoll:
				// A spinning client waits for the responder's side.
				wantStart = runs
			}
			if ready != runs || result != runs || start != wantStart || done != wantDone {
				t.Errorf("%d runs crossed %d ready, %d start, %d done, %d result; want %d, %d, %d, %d",
					runs, ready, start, done, result, runs, wantStart, wantDone, runs)
			}
		})
	}
}

// TestSessionFoldedResponderKilled: a responder killed between folded
// runs, its next run already prepared, fails the client's next run
// within its bound rather than leaving it to hang, and the client's QPs
// are freed on Close.
func TestSessionFoldedResponderKilled(t *testing.T) {
	r := startResponder(t)
	base1 := qpsOn(t, "rxe1")
	cc := client(r)
	cc.SkipPortCounters = true
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Iterations: 10})
	s, err := peer.Dial(context.Background(), cc, spec, time.Minute)
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, r.output())
	}
	defer s.Close()
	for range 2 {
		if _, err := s.Run(context.Background()); err != nil {
			t.Fatalf("run: %v\n%s", err, r.output())
		}
	}
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Wait()
	start := time.Now()
	_, err = s.Run(context.Background())
	took := time.Since(start)
	t.Logf("the run after the kill failed in %v: %v", took, err)
	if err == nil {
		t.Fatal("a run against a killed responder succeeded")
	}
	// Its bound: a step to say Ready, the stall deadline and a step for
	// the result.
	if bound := 2*cc.StepTimeout + time.Duration(spec.StallTimeout); took > bound {
		t.Errorf("the run took %v to fail, past its bound %v", took, bound)
	}
	s.Close()
	waitQPs(t, "rxe1", base1, "after Close, the client's")
}

// TestSessionFoldedOutlastsReadTimeout: a folded run may take longer
// than the control channel's own read timeout (ctrl.DefaultTimeout, what
// a read waits when its context sets no deadline). The client waits for
// the responder's Result as long as its side runs: the read once took
// that timeout as its own and failed every run longer than it.
func TestSessionFoldedOutlastsReadTimeout(t *testing.T) {
	r := startResponder(t)
	cc := client(r)
	cc.SkipPortCounters = true
	// Round trips take 0.5 to 1.4 ms in event mode in the emulated VM,
	// with the machine idle or loaded (20,000 took 9.9 s on an idle one,
	// under the timeout), so a short run first measures this boot's rate,
	// and the run is sized to last twice the read timeout.
	calib := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Iterations: 2000})
	cs, err := peer.Dial(context.Background(), cc, calib, time.Minute)
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, r.output())
	}
	cres, err := cs.Run(context.Background())
	cs.Close()
	if err != nil {
		t.Fatalf("calibration run: %v\n%s", err, r.output())
	}
	perTrip := cres.Elapsed / time.Duration(cres.Latency.RTT.Count)
	// The emulator's speed changes with the host's load (a calibration
	// at 1.87 ms per trip was followed by a run at 0.36 ms when another
	// VM stopped), so a run that ended within the timeout is sized
	// again from its own rate, at most three times.
	var res *rdma.Result
	for attempt := 1; ; attempt++ {
		iters := int(2 * ctrl.DefaultTimeout / perTrip)
		t.Logf("attempt %d: %v per round trip: %d round trips", attempt, perTrip, iters)
		spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Iterations: iters})
		s, err := peer.Dial(context.Background(), cc, spec, time.Minute)
		if err != nil {
			t.Fatalf("dial: %v\n%s", err, r.output())
		}
		res, err = s.Run(context.Background())
		s.Close()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, r.output())
		}
		t.Logf("%d round trips in %v", res.Latency.RTT.Count, res.Elapsed)
		if res.Elapsed > ctrl.DefaultTimeout || attempt == 3 {
			break
		}
		perTrip = res.Elapsed / time.Duration(res.Latency.RTT.Count)
	}
	if res.Elapsed <= ctrl.DefaultTimeout {
		t.Errorf("the run took %v, within the channel's %v read timeout: the test shows nothing (three runs sized from the last one's rate were all shorter)", res.Elapsed, ctrl.DefaultTimeout)
	}
}
