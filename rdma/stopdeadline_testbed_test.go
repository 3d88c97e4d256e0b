//go:build testbed

package rdma_test

import (
	"context"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/netfault"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestStopAtDeadlineOnDeadPath: a latency run whose path loses every
// packet (retry_cnt 7 retries for ever; the stall timeout is past the
// deadline) ends with its context, in both modes, rather than when the
// QP or the stall gives up: a prober's timeout must hold however the
// fabric fails. (A control for an exporter probe that outlived its 2.5 s
// timeout by 0.56 s once in CI, through a kept, folded session.)
func TestStopAtDeadlineOnDeadPath(t *testing.T) {
	testbedDevices(t)
	retry := 7
	for _, mode := range []rdma.Mode{rdma.ModeEvent, rdma.ModeBusyPoll} {
		t.Run(mode.String(), func(t *testing.T) {
			spec := rdma.TestSpec{Op: rdma.OpWriteImm, Measure: rdma.MeasureLatency, Mode: mode, Size: 2, Iterations: 1000000,
				StallTimeout: rdma.Duration(1250 * time.Millisecond), QP: rdma.QPSettings{RetryCnt: &retry}}
			p := newPair(t, "rxe1", "rxe0", spec)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			go func() {
				time.Sleep(200 * time.Millisecond)
				netfault.Loss(t, "veth1", "100%")
			}()
			start := time.Now()
			_, err := p.Run(ctx, rdmatest.Complete(t, spec))
			took := time.Since(start)
			t.Logf("%s: took %v: %v", mode, took, err)
			if took > 1200*time.Millisecond {
				t.Errorf("took %v after a 1 s deadline", took)
			}
			time.Sleep(300 * time.Millisecond)
		})
	}
}
