//go:build testbed

package peer_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// probeSpec is the exporter's default probe: 10 write_imm round trips of
// 2 B in event mode.
func probeSpec(t *testing.T) rdma.Test {
	return rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Iterations: 10})
}

// waitQPs waits up to 5 s for device to hold want QPs.
func waitQPs(t *testing.T, device string, want int, why string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := qpsOn(t, device)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s holds %d QPs, want %d", why, device, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testLog writes a client's debug log into the test's, so a slow step
// shows where its time went.
type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func dial(t *testing.T, r *responder, keep time.Duration) *peer.Session {
	t.Helper()
	cc := client(r)
	cc.Logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := peer.Dial(context.Background(), cc, probeSpec(t), keep)
	if err != nil {
		t.Fatalf("dial: %v\nresponder log:\n%s", err, r.output())
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func runOnce(t *testing.T, r *responder, s *peer.Session) *rdma.Result {
	t.Helper()
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\nresponder log:\n%s", err, r.output())
	}
	rdmatest.CheckResult(t, res)
	return res
}

// TestSessionKeepsQPs: a kept session runs again and again on the same
// QPs at both ends, and Close frees both ends' at once.
func TestSessionKeepsQPs(t *testing.T) {
	r := startResponder(t)
	base0, base1 := qpsOn(t, "rxe0"), qpsOn(t, "rxe1")
	s := dial(t, r, time.Minute)
	if s.Idle() != time.Minute {
		t.Fatalf("the responder keeps the session for %v, want the minute asked", s.Idle())
	}
	if s.Setup() <= 0 {
		t.Errorf("Setup() = %v, want the time Dial took", s.Setup())
	}
	var qpns [][]uint32
	for range 5 {
		if !s.Usable() {
			t.Fatal("a kept session that just ran is not usable")
		}
		start := time.Now()
		res := runOnce(t, r, s)
		t.Logf("run took %v (set-up took %v)", time.Since(start), s.Setup())
		if got := res.Latency.RTT.Count; got != 10 {
			t.Errorf("run has %d round trips, want 10", got)
		}
		qpns = append(qpns, res.Requester.QPNs, res.Responder.QPNs)
		if q0, q1 := qpsOn(t, "rxe0"), qpsOn(t, "rxe1"); q0 != base0+1 || q1 != base1+1 {
			t.Errorf("between runs: %d QPs on rxe0 and %d on rxe1, want %d and %d (one per end, kept)", q0, q1, base0+1, base1+1)
		}
	}
	for i := 2; i < len(qpns); i++ {
		if !slices.Equal(qpns[i], qpns[i%2]) {
			t.Errorf("run %d used QPs %v, the first %v: the session did not keep its QPs", i/2+1, qpns[i], qpns[i%2])
		}
	}
	start := time.Now()
	s.Close()
	waitQPs(t, "rxe0", base0, "after Close, the responder's")
	t.Logf("both ends' QPs freed %v after Close", time.Since(start))
	waitQPs(t, "rxe1", base1, "after Close, the client's")
	if _, err := s.Run(context.Background()); err == nil {
		t.Error("Run on a closed session succeeded")
	}
}

// TestSessionOneRun: asking for no session (keep 0), as peer.Run and
// clients from before sessions do, gets one run; a second is refused
// without touching the responder.
func TestSessionOneRun(t *testing.T) {
	r := startResponder(t)
	s := dial(t, r, 0)
	if s.Idle() != 0 || s.Usable() {
		t.Fatalf("Idle() = %v, Usable() = %v for a one-run session", s.Idle(), s.Usable())
	}
	runOnce(t, r, s)
	if _, err := s.Run(context.Background()); err == nil {
		t.Error("a second run on a one-run session succeeded")
	}
}

// TestSessionLimit: beyond --max-sessions, a client asking to be kept is
// served one run at a time, and the kept sessions go on.
func TestSessionLimit(t *testing.T) {
	r := startResponder(t, "--max-sessions", "1")
	kept := dial(t, r, time.Minute)
	if kept.Idle() == 0 {
		t.Fatal("the first session was not kept")
	}
	other := dial(t, r, time.Minute)
	if other.Idle() != 0 {
		t.Fatalf("the second session is kept for %v beyond --max-sessions 1", other.Idle())
	}
	runOnce(t, r, other)
	runOnce(t, r, kept)
	runOnce(t, r, kept)
}

// TestSessionIdlesOut: the responder ends a session left idle longer
// than --session-idle and frees its QPs; the client sees it as unusable.
func TestSessionIdlesOut(t *testing.T) {
	r := startResponder(t, "--session-idle", "2s")
	base0 := qpsOn(t, "rxe0")
	s := dial(t, r, time.Minute)
	if s.Idle() != 2*time.Second {
		t.Fatalf("kept for %v, want the responder's 2s", s.Idle())
	}
	runOnce(t, r, s)
	time.Sleep(time.Second)
	if !s.Usable() {
		t.Fatal("unusable 1 s into a 2 s idle limit")
	}
	runOnce(t, r, s)
	waitQPs(t, "rxe0", base0, "2 s after the last run, the responder's")
	if s.Usable() {
		t.Error("a session the responder ended is still usable")
	}
}

// TestSessionResponderGone: a responder that stops between runs leaves
// the session unusable, not a run that hangs or fails later.
func TestSessionResponderGone(t *testing.T) {
	r := startResponder(t)
	s := dial(t, r, time.Minute)
	runOnce(t, r, s)
	r.stop(t)
	deadline := time.Now().Add(5 * time.Second)
	for s.Usable() {
		if time.Now().After(deadline) {
			t.Fatal("the session is still usable 5 s after its responder stopped")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSessionWithoutCounters: a client that skips the port counters gets
// results without counter deltas from either end, where the same run
// with them shows the packets it moved.
func TestSessionWithoutCounters(t *testing.T) {
	r := startResponder(t)
	for _, skip := range []bool{false, true} {
		cc := client(r)
		cc.SkipPortCounters = skip
		s, err := peer.Dial(context.Background(), cc, probeSpec(t), time.Minute)
		if err != nil {
			t.Fatalf("dial: %v\nresponder log:\n%s", err, r.output())
		}
		res := runOnce(t, r, s)
		s.Close()
		for i, side := range res.Sides {
			moved := side.Counters.HWCounters["sent_pkts"] + side.Counters.HWCounters["rcvd_pkts"]
			if skip && (len(side.Counters.HWCounters) > 0 || len(side.Counters.Counters) > 0) {
				t.Errorf("skipping counters: side %d (%s) has counter deltas %+v", i, side.Device, side.Counters)
			}
			if !skip && moved == 0 {
				t.Errorf("with counters: side %d (%s) moved no packets: %+v", i, side.Device, side.Counters)
			}
		}
	}
}
