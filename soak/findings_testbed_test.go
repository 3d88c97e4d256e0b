//go:build testbed

package soak_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/soak"
)

// TestMultiQPReceives holds what the first soak runs found, alone on a
// quiet responder so that neither load nor the fabric is to blame:
//
//   - a test whose target consumes receives (send here; send_imm and
//     write_imm failed alike in the soak) on a session kept between runs
//     stalled in its second run, on 4 QPs always (at iteration 1,
//     waiting for a receive completion), on one QP about once in 160
//     sessions. Cause: the latency responder left its last answers'
//     completions in the CQs, and the next run counted them; fixed in
//     rdma/loop.c (lat_responder reaps them), and these cases pass;
//   - send bandwidth on 4 QPs with tx_depth 16 failed its first run at
//     iteration 0 with REM_OP_ERR (REM_INV_REQ_ERR in the soak), where
//     the default tx_depth on 4 QPs, or tx_depth 16 on one QP, passed;
//     cause not found, and the soak's mix still runs such tests on one
//     QP (plan.go).
//
// The other cases are the controls.
func TestMultiQPReceives(t *testing.T) {
	cfg := quietResponder(t, "findings")
	for _, c := range []struct {
		spec rdma.TestSpec
		runs int
	}{
		{rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Size: 128, QPs: 1, Iterations: 50}, 2},
		{rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Size: 128, QPs: 4, Iterations: 50}, 2},
		{rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Size: 128, QPs: 4, Threads: 2, Iterations: 50}, 2},
		{rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Size: 128, QPs: 2, Iterations: 50}, 2},
		{rdma.TestSpec{Op: rdma.OpRead, Measure: rdma.MeasureLatency, Size: 128, QPs: 2, Iterations: 50}, 2},
		{rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, QPs: 2, Iterations: 50}, 2},
		{rdma.TestSpec{Op: rdma.OpRead, Measure: rdma.MeasureBandwidth, Size: 4096, QPs: 2, Iterations: 50}, 2},
		{rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 32768, QPs: 4, Iterations: 50}, 1},
		{rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 32768, QPs: 4, TxDepth: 16, Iterations: 50}, 1},
		{rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 32768, QPs: 1, TxDepth: 16, Iterations: 50}, 1},
	} {
		t.Run(fmt.Sprintf("%s/%s/qps%d/threads%d/tx%d/runs%d", c.spec.Op, c.spec.Measure, c.spec.QPs, c.spec.Threads, c.spec.TxDepth, c.runs), func(t *testing.T) {
			spec, err := c.spec.Complete()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			keep := time.Duration(0)
			if c.runs > 1 {
				keep = 30 * time.Second
			}
			s, err := peer.Dial(ctx, cfg, spec, keep)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for run := 1; run <= c.runs; run++ {
				res, err := s.Run(ctx)
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if err := soak.CheckResult(spec, res); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
		})
	}
}

// quietResponder starts a responder of its own, with token, for tests that
// need one pair and nothing else, and returns a client's configuration.
func quietResponder(t *testing.T, token string) peer.ClientConfig {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startResponder(t, tokenFile)
	tok, err := ctrl.ReadToken(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	return peer.ClientConfig{Addr: serveHost + ":" + servePort, Token: tok, Device: clientDevice, GIDIndex: rdma.AutoGIDIndex}
}
