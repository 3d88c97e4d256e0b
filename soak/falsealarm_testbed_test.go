//go:build testbed

package soak_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/soak"
)

// TestFalseAlarms is the false-alarm budget: FALSE_ALARM_RUNS (default 24)
// fresh sessions one after another between one healthy pair, each a test
// drawn from every op, both measures, both modes, 1-8 QPs and 2 B to
// 16 MiB, with the engine's defaults (no soak deadlines), while a busy
// loop holds each vCPU. A healthy fabric under CPU load is slow, never
// broken: every run must pass. FALSE_ALARM_SEED replays a draw; make
// false-alarms runs 1,000.
func TestFalseAlarms(t *testing.T) {
	runs := envInt(t, "FALSE_ALARM_RUNS", 24, 1)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FALSE_ALARM_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("FALSE_ALARM_SEED=%q: want the number a run printed", v)
		}
	}
	t.Logf("FALSE_ALARM_SEED=%d, %d runs", seed, runs)
	cfg := quietResponder(t, "false-alarms")
	hogCPUs(t, 2)
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	failed := 0
	start := time.Now()
	for i := range runs {
		spec, err := falseAlarmSpec(r).Complete()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		err = runOnce(cfg, spec)
		if err != nil {
			failed++
			t.Errorf("run %d (%s): %v", i, spec.Settings(), err)
		}
		if (i+1)%100 == 0 {
			// A long run killed by its deadline still says how far it got.
			t.Logf("%d of %d runs in %v: %d failed", i+1, runs, time.Since(start).Round(time.Second), failed)
		}
	}
	t.Logf("%d runs in %v under a busy loop per vCPU: %d failed", runs, time.Since(start).Round(time.Second), failed)
}

// runOnce runs spec on a session of its own, as a fresh rdmarun bench
// would, and checks the result makes sense.
func runOnce(cfg peer.ClientConfig, spec rdma.Test) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := peer.Dial(ctx, cfg, spec, 0)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.Run(ctx)
	if err != nil {
		return err
	}
	return soak.CheckResult(spec, res)
}

// falseAlarmBytes bounds one run's traffic per direction, so that 16 MiB
// messages and 2 B ones each take seconds, not minutes, in the VM.
const falseAlarmBytes = 32 << 20

var falseAlarmOps = []rdma.Op{rdma.OpSend, rdma.OpSendImm, rdma.OpWrite, rdma.OpWriteImm, rdma.OpRead, rdma.OpFetchAdd, rdma.OpCmpSwap}

func falseAlarmSpec(r *rand.Rand) rdma.TestSpec {
	s := rdma.TestSpec{
		Op:      falseAlarmOps[r.IntN(len(falseAlarmOps))],
		Measure: rdma.Measure(r.IntN(2)),
		Mode:    rdma.Mode(r.IntN(2)),
		QPs:     1 + r.IntN(8),
		Size:    2 << r.IntN(24), // log-uniform, 2 B .. 16 MiB
	}
	if s.Op == rdma.OpWrite && s.Measure == rdma.MeasureLatency && s.Mode == rdma.ModeEvent {
		s.Op = rdma.OpWriteImm // write latency has no event mode, by design
	}
	if s.Op.Atomic() {
		s.Size = 8
	}
	// Large messages on fewer QPs, within the responder's 1 GiB.
	s.QPs = max(1, min(s.QPs, falseAlarmBytes/s.Size))
	lo, hi := 2, 2000
	if s.Measure == rdma.MeasureLatency {
		hi = 500
	}
	s.Iterations = min(max(falseAlarmBytes/(s.Size*s.QPs), lo), hi)
	return s
}

// hogCPUs starts n busy loops, one per vCPU, until the test ends.
func hogCPUs(t *testing.T, n int) {
	t.Helper()
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Process.Kill()
			_ = c.Wait()
		})
	}
}
