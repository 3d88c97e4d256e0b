//go:build testbed

package rdma_test

import (
	"context"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestModeratedLatencySends: a ping-pong latency run asks for a send
// completion on every cq_moderation-th WR and on its last. Each pair runs
// four times in a row, as a kept session does: a run whose last WR asked
// for nothing would wait for a completion that never comes (the
// responder reaps its last answers' before it returns) and fail with a
// stall, and a run that left a WR to the next would find its send queue
// fuller than its counts say.
func TestModeratedLatencySends(t *testing.T) {
	testbedDevices(t)
	// 63 WRs per QP and run: completions asked on the 15 multiples of 4
	// and on the 63rd, the last, which is not one.
	const qps, warmup, iters, mod = 2, 3, 60, 4
	for _, tc := range []struct {
		op   rdma.Op
		mode rdma.Mode
	}{
		{rdma.OpWriteImm, rdma.ModeEvent}, {rdma.OpSend, rdma.ModeEvent},
		{rdma.OpWrite, rdma.ModeBusyPoll}, {rdma.OpSendImm, rdma.ModeBusyPoll},
	} {
		t.Run(tc.op.String()+"/"+tc.mode.String(), func(t *testing.T) {
			spec := rdma.TestSpec{Op: tc.op, Mode: tc.mode, Size: 2, QPs: qps, Warmup: warmup, Iterations: iters,
				TxDepth: mod, CQModeration: mod, Validate: true, StallTimeout: rdma.Duration(2 * time.Second)}
			p := newPair(t, "rxe1", "rxe0", spec)
			for run := range 4 {
				r, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
				if err != nil {
					t.Fatalf("run %d: %v", run+1, err)
				}
				rdmatest.CheckResult(t, r)
				if r.Events > 0 {
					t.Logf("run %d: %d completion events on both sides for %d round trips", run+1, r.Events, qps*(warmup+iters))
				}
			}
		})
	}
}
