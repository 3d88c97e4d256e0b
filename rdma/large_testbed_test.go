//go:build testbed

package rdma_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestLargeMessages: bandwidth runs of large messages with the defaults
// (tx_depth 128, a completion asked on every 100th WR and the last) on a
// slow link. Under emulation rxe moves about 27 MB/s, so the first
// completion of a run comes only after the whole run's bytes have
// crossed (4 x 16 MiB x 4 QPs is 10 s): a slow link, not a dead one, and
// every run must pass. The Makefile runs it on the 2-host and the 4-host
// layout.
func TestLargeMessages(t *testing.T) {
	testbedDevices(t)
	for _, op := range []rdma.Op{rdma.OpWrite, rdma.OpRead, rdma.OpSend} {
		for _, qps := range []int{1, 4} {
			for _, mib := range []int{1, 4, 8, 16} {
				spec := rdma.TestSpec{Op: op, Measure: rdma.MeasureBandwidth, Size: mib << 20, QPs: qps, Iterations: 4}
				t.Run(fmt.Sprintf("%s/%dqp/%dMiB", op, qps, mib), func(t *testing.T) {
					p := newPair(t, "rxe1", "rxe0", spec)
					r, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
					if err != nil {
						t.Fatal(err)
					}
					rdmatest.CheckResult(t, r)
					d := r.Bandwidth.Directions[0]
					t.Logf("%s->%s %.4f Gb/s over %.1f s", d.From, d.To, d.Gbps(), r.Elapsed.Seconds())
				})
			}
		}
	}
}
