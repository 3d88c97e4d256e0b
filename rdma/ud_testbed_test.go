//go:build testbed

package rdma_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestUDMatrix runs send and send_imm over UD, latency and bandwidth, busy
// poll and event mode, one QP and four, with data validation, between rxe1
// and rxe0. On a healthy link a round trip is never lost (one message in
// flight per QP), and every message a bandwidth run sent is accounted for
// as received or lost.
func TestUDMatrix(t *testing.T) {
	testbedDevices(t)
	for _, op := range []rdma.Op{rdma.OpSend, rdma.OpSendImm} {
		for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
			for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
				for _, qps := range []int{1, 4} {
					spec := rdma.TestSpec{Op: op, Measure: m, Mode: mode, QPType: rdma.UD, QPs: qps, Iterations: 300, Validate: true}
					name := op.String() + "/" + m.String() + "/" + mode.String() + "/" + map[int]string{1: "1qp", 4: "4qp"}[qps]
					t.Run(name, func(t *testing.T) {
						r := run(t, "rxe1", "rxe0", spec)
						if m == rdma.MeasureLatency {
							checkRoundTrips(t, r)
							return
						}
						checkMessages(t, r)
					})
				}
			}
		}
	}
}

func checkRoundTrips(t *testing.T, r *rdma.Result) {
	t.Helper()
	d := r.Latency.Delivery
	if d == nil {
		t.Fatal("a UD latency result without its delivery")
	}
	want := uint64(r.Spec.Warmup+r.Spec.Iterations) * uint64(r.Spec.QPs)
	if d.Sent != want || d.Received != want || d.Lost != 0 || d.Late != 0 || d.Silent {
		t.Errorf("delivery %+v, want %d round trips, all answered in time", *d, want)
	}
	if n := r.Latency.RTT.Count; n != r.Spec.Iterations*r.Spec.QPs {
		t.Errorf("%d round trips timed, want %d", n, r.Spec.Iterations*r.Spec.QPs)
	}
	t.Logf("RTT p50 %.1f us, p99 %.1f us; %+v", r.Latency.RTT.P50/1e3, r.Latency.RTT.P99/1e3, *d)
}

func checkMessages(t *testing.T, r *rdma.Result) {
	t.Helper()
	dir := r.Bandwidth.Directions[0]
	d := dir.Delivery
	if d == nil {
		t.Fatal("a UD bandwidth direction without its delivery")
	}
	want := uint64(r.Spec.Iterations) * uint64(r.Spec.QPs)
	if d.Sent != want || d.Received+d.Lost != want || d.Received == 0 {
		t.Errorf("delivery %+v, want %d sent, each received or lost, some received", *d, want)
	}
	if d.ReceivedBytesPerSecond <= 0 {
		t.Errorf("receive rate %v", d.ReceivedBytesPerSecond)
	}
	for i, q := range r.Bandwidth.PerQP {
		if q[0].Delivery == nil || q[0].Delivery.Sent != uint64(r.Spec.Iterations) {
			t.Errorf("QP %d: delivery %+v, want %d sent", i, q[0].Delivery, r.Spec.Iterations)
		}
	}
	t.Logf("%s->%s sent %.4f Gb/s, received %.4f Gb/s; sent %d, received %d, lost %d (%.2f%%)",
		dir.From, dir.To, dir.Gbps(), d.ReceivedGbps(), d.Sent, d.Received, d.Lost, 100*d.LossRatio)
}

// TestUDAboveMTU: a UD message is one packet, so a size above the path
// MTU (rxe's active MTU on a 1500-byte veth is 1024) is refused before
// anything is sent, naming the MTU and where it came from.
func TestUDAboveMTU(t *testing.T) {
	testbedDevices(t)
	spec := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, QPType: rdma.UD, Size: 2048, Iterations: 10}
	p := newPair(t, "rxe1", "rxe0", spec)
	_, err := p.Run(context.Background(), rdmatest.Complete(t, spec))
	// Either end may find it first: the responder is prepared first here.
	if err == nil || !strings.Contains(err.Error(), "size 2048 bytes is above the path MTU 1024 bytes on rxe") || !strings.Contains(err.Error(), "active MTU 1024 and the peer rxe") {
		t.Fatalf("Run = %v, want a refusal naming the path MTU and its source", err)
	}
}

// TestUDTotalLoss drops every packet from rxe1 to rxe0 (testbed/fault.sh):
// a latency run reports its round trips lost and ends once nothing has
// been answered for stall_timeout; a bandwidth run reports every message
// lost and ends a loss_timeout after its sender. Neither is an error: on
// UD loss is a result.
func TestUDTotalLoss(t *testing.T) {
	testbedDevices(t)
	rdmatest.Fault(t, "path-loss", "1", "0", "100")
	const stall, loss = 2 * time.Second, 200 * time.Millisecond
	for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
		for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
			t.Run(m.String()+"/"+mode.String(), func(t *testing.T) {
				spec := rdma.TestSpec{Op: rdma.OpSend, Measure: m, Mode: mode, QPType: rdma.UD, Iterations: 1000,
					StallTimeout: rdma.Duration(stall), LossTimeout: rdma.Duration(loss)}
				start := time.Now()
				r := run(t, "rxe1", "rxe0", spec)
				took := time.Since(start)
				var d *rdma.Delivery
				if m == rdma.MeasureLatency {
					d = r.Latency.Delivery
					// stall_timeout of silence, rounded up to a loss_timeout.
					if d == nil || !d.Silent || d.Received != 0 || d.Lost != d.Sent || d.Sent < uint64(stall/loss) || d.Sent > uint64(stall/loss)+2 {
						t.Errorf("delivery %+v, want about %d round trips, all lost, ended silent", d, stall/loss)
					}
				} else {
					d = r.Bandwidth.Directions[0].Delivery
					if d == nil || d.Sent != 1000 || d.Received != 0 || d.Lost != 1000 || d.LossRatio != 1 {
						t.Errorf("delivery %+v, want 1000 sent, all lost", d)
					}
				}
				// The bound: the silence or the drain, and the pair's set-up;
				// well short of the iterations' worth of loss timeouts.
				if limit := stall + 2*loss + 3*time.Second; took > limit {
					t.Errorf("took %v, want at most %v", took, limit)
				}
				t.Logf("took %v: %+v", took, *d)
			})
		}
	}
}

// TestUDPartialLoss drops 20% of the packets from rxe1 to rxe0: every run
// finishes, and every message or round trip is accounted for as received,
// lost or (latency) late.
func TestUDPartialLoss(t *testing.T) {
	testbedDevices(t)
	rdmatest.Fault(t, "path-loss", "1", "0", "20")
	for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
		t.Run(m.String(), func(t *testing.T) {
			spec := rdma.TestSpec{Op: rdma.OpSendImm, Measure: m, QPType: rdma.UD, QPs: 2, Iterations: 200, LossTimeout: rdma.Duration(100 * time.Millisecond)}
			r := run(t, "rxe1", "rxe0", spec)
			var d *rdma.Delivery
			if m == rdma.MeasureLatency {
				d = r.Latency.Delivery
				if d == nil || d.Silent || d.Lost == 0 || d.Received == 0 || d.Received+d.Lost+d.Late != d.Sent || d.Sent != 2*uint64(r.Spec.Warmup+200) {
					t.Errorf("delivery %+v, want %d round trips, some lost, each answered, lost or late", d, 2*(r.Spec.Warmup+200))
				}
			} else {
				d = r.Bandwidth.Directions[0].Delivery
				if d == nil || d.Sent != 400 || d.Lost == 0 || d.Received == 0 || d.Received+d.Lost != 400 {
					t.Errorf("delivery %+v, want 400 sent, some lost, each received or lost", d)
				}
			}
			t.Logf("%+v: %.1f%% lost", *d, 100*d.LossRatio)
		})
	}
}
