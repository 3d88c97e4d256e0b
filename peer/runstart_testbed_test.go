//go:build testbed

package peer_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestRunStartLatency measures what a probe's mean round trip is made of:
// on a kept session, as the exporter probes, the round trip at each
// position after a run's start (runs of one measured round trip after w
// warm-up ones), with the runs a second apart as a prober makes them and
// back to back; and runs of 10 after w warm-up ones against 1,000 after
// 100, as `rdmarun bench` runs. It is a measurement, not a check of
// speed: `make run-start-latency` runs it, and it fails only when a run
// fails. exporter/README.md (Probe cost) has its table.
func TestRunStartLatency(t *testing.T) {
	if os.Getenv("RUN_START_LATENCY") == "" {
		t.Skip("a measurement of minutes; make run-start-latency runs it")
	}
	r := startResponder(t)
	// runs opens a session of spec and makes n+1 runs gap apart, the
	// first not counted (it is the one that sets the session up).
	runs := func(spec rdma.TestSpec, n int, gap time.Duration) []rdma.Summary {
		cc := client(r)
		cc.SkipPortCounters = true
		s, err := peer.Dial(context.Background(), cc, rdmatest.Complete(t, spec), time.Minute)
		if err != nil {
			t.Fatalf("dial: %v\n%s", err, r.output())
		}
		defer s.Close()
		var out []rdma.Summary
		for i := range n + 1 {
			time.Sleep(gap)
			res, err := s.Run(context.Background())
			if err != nil {
				t.Fatalf("%s, run %d: %v\n%s", spec, i, err, r.output())
			}
			if i > 0 {
				out = append(out, res.Latency.RTT)
			}
		}
		return out
	}
	us := func(ns float64) string { return fmt.Sprintf("%.0f", ns/1000) }
	// stats is the median and mean of one value over runs.
	stats := func(ss []rdma.Summary, v func(rdma.Summary) float64) (median, mean float64) {
		vs := make([]float64, len(ss))
		for i, s := range ss {
			vs[i] = v(s)
			mean += vs[i]
		}
		slices.Sort(vs)
		return vs[len(vs)/2], mean / float64(len(vs))
	}
	modes := []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent}

	var pos strings.Builder
	pos.WriteString("| mode | runs | round trip no. | median us | mean us |\n|---|---|---|---|---|\n")
	for _, mode := range modes {
		for _, gap := range []time.Duration{time.Second, 0} {
			for _, w := range []int{0, 1, 2, 4, 8, 16} {
				ss := runs(rdma.TestSpec{Op: rdma.OpWriteImm, Mode: mode, Iterations: 1, Warmup: w}, 10, gap)
				med, mean := stats(ss, func(s rdma.Summary) float64 { return s.Max })
				fmt.Fprintf(&pos, "| %s | %v apart | %d | %s | %s |\n", mode, gap, w+1, us(med), us(mean))
			}
		}
	}
	var warm strings.Builder
	warm.WriteString("| mode | round trips | warm-up | median of run means us | mean of run means us | median of run medians us |\n|---|---|---|---|---|---|\n")
	for _, mode := range modes {
		for _, w := range []int{-1, 1, 10, 20} {
			spec, n := rdma.TestSpec{Op: rdma.OpWriteImm, Mode: mode, Iterations: 10, Warmup: w}, 20
			if w < 0 {
				spec.Iterations, spec.Warmup, n = 1000, 100, 3
			}
			ss := runs(spec, n, time.Second)
			med, mean := stats(ss, func(s rdma.Summary) float64 { return s.Mean })
			p50, _ := stats(ss, func(s rdma.Summary) float64 { return s.P50 })
			fmt.Fprintf(&warm, "| %s | %d | %d | %s | %s | %s |\n", mode, spec.Iterations, spec.Warmup, us(med), us(mean), us(p50))
		}
	}
	t.Logf("write_imm, 2 B, rxe1 -> rxe0, a kept session per row; RTT.\n"+
		"The round trip at each position after a run's start (runs of one measured round trip after the warm-up ones, 10 runs per row):\n%s\n"+
		"Runs a second apart, by their warm-up (20 runs per row; 3 of 1,000 round trips, as bench runs):\n%s", pos.String(), warm.String())
}
