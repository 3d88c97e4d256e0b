//go:build testbed

package peer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/perftest"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestRunStartLatency measures what a probe's mean round trip is made of:
// on a kept session, as the exporter probes, the round trip at each
// position after a run's start (runs of one measured round trip after w
// warm-up ones), with the runs a second apart as a prober makes them and
// back to back; and runs of 10 after w warm-up ones against 1,000 after
// 100, as `rdmarun bench` runs; and perftest's round trips by position
// on the same pair, which show the machine's own first round trips. It
// is a measurement, not a check of speed: `make run-start-latency` runs
// it, and it fails only when a run fails. docs/measurements.md (Probe
// cost) has its tables.
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
		}
		return medianMean(vs)
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
		for _, w := range []int{-1, 1, 2, 4, 10, 20} {
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
	// perftest on the same pair: a new process and QP per run, so its
	// first round trip follows connection set-up, not an idle second.
	var pt strings.Builder
	pt.WriteString("| round trip no. | median us | mean us |\n|---|---|---|\n")
	runsPT := perftestRoundTrips(t, 10, time.Second)
	for _, n := range []int{1, 2, 3, 5, 9, 17} {
		vs := make([]float64, len(runsPT))
		for i, rts := range runsPT {
			vs[i] = rts[n-1]
		}
		med, mean := medianMean(vs)
		fmt.Fprintf(&pt, "| %d | %.0f | %.0f |\n", n, med, mean)
	}
	t.Logf("write_imm, 2 B, rxe1 -> rxe0, a kept session per row; RTT.\n"+
		"The round trip at each position after a run's start (runs of one measured round trip after the warm-up ones, 10 runs per row):\n%s\n"+
		"Runs a second apart, by their warm-up (20 runs per row; 3 of 1,000 round trips, as bench runs):\n%s\n"+
		"perftest's ib_write_lat -U on the same pair, busy-poll, 2 B, 10 runs a second apart, each a new process and QP; RTT (twice the one-way time it lists):\n%s",
		pos.String(), warm.String(), pt.String())
}

// medianMean is the median (the upper one of an even count) and mean of vs;
// it sorts vs.
func medianMean(vs []float64) (median, mean float64) {
	for _, v := range vs {
		mean += v
	}
	slices.Sort(vs)
	return vs[len(vs)/2], mean / float64(len(vs))
}

// perftestRoundTrips runs ib_write_lat n times, gap apart, rxe1 -> rxe0
// at 2 B, and returns each run's round trips in the order they were made,
// in microseconds: twice the one-way times its -U list gives, first
// included (its summary leaves the first out).
func perftestRoundTrips(t *testing.T, n int, gap time.Duration) [][]float64 {
	t.Helper()
	var out [][]float64
	for range n {
		time.Sleep(gap)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		common := []string{"-x", "1", "-p", "18515", "-F", "-s", "2", "-n", "20", "-U"}
		server := exec.CommandContext(ctx, "ib_write_lat", append([]string{"-d", "rxe0"}, common...)...)
		var serverOut bytes.Buffer
		server.Stdout, server.Stderr = &serverOut, &serverOut
		if err := server.Start(); err != nil {
			cancel()
			t.Fatalf("ib_write_lat server (perftest is in the testbed image): %v", err)
		}
		report, err := perftest.RunClient(ctx, func() *exec.Cmd {
			return exec.CommandContext(ctx, "ib_write_lat", append(append([]string{"-d", "rxe1"}, common...), "10.0.0.1")...)
		})
		_ = server.Wait()
		cancel()
		if err != nil {
			t.Fatalf("ib_write_lat client: %v\n%s\nserver:\n%s", err, report, serverOut.Bytes())
		}
		oneWay, err := perftest.ParseSamples(bytes.NewReader(report))
		if err != nil {
			t.Fatalf("ib_write_lat -U report: %v\n%s", err, report)
		}
		rtts := make([]float64, len(oneWay))
		for i, v := range oneWay {
			rtts[i] = 2 * v
		}
		out = append(out, rtts)
	}
	return out
}
