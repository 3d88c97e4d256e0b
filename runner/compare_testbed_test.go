//go:build testbed

package runner

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma/rdmatest"
	"github.com/rdmarun/rdmarun/runner/compare"
	"github.com/rdmarun/rdmarun/runner/report"
)

// trials reads a trial count from env (make compare-trials sets the long
// form), or def.
func trials(t *testing.T, env string, def int) int {
	t.Helper()
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count of trials", env, s)
	}
	return n
}

// runBaseline runs scenarios/baseline.yaml on rxe1 -> rxe0.
func runBaseline(t *testing.T, target Target) *report.Report {
	t.Helper()
	sc, err := Load("../scenarios/baseline.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Execute(context.Background(), sc, target, Options{Tool: "rdmarun test", File: "scenarios/baseline.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	checkAllPassed(t, sc, rep)
	return rep
}

// verdicts lists each test's verdict, and for a regression the metrics
// that decided it, for the log.
func verdicts(c *compare.Comparison) string {
	var parts []string
	for _, r := range c.Runs {
		s := r.Key.Case + " " + string(r.Verdict)
		for _, m := range r.Metrics {
			if m.Verdict == compare.Regressed || m.Verdict == compare.Improved {
				s += " " + m.Name + strconv.FormatFloat((m.Ratio-1)*100, 'f', 1, 64) + "%"
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// TestCompareQuietVM: two runs of scenarios/baseline.yaml (3 passes each,
// 2 s apart) on a quiet testbed compare as no significant change, in at
// least 95% of the trials (COMPARE_TRIALS, 40 by make compare-trials).
//
// It does not hold yet, so make test leaves it out and make
// compare-trials runs it. Under emulation a run's level holds for seconds
// and differs between them by 15-30% at p50 (and p99 doubles in a noisy
// stretch): with passes back to back, 33 of 40 trials were quiet
// (2026-12-07), the passes sharing one stretch; with repeat_gap 2s, 37 of
// 40, measured while other work loaded the host's two CPUs (the three
// flagged trials had p50 up to 100x, a starved VM rather than drift).
func TestCompareQuietVM(t *testing.T) {
	target := vmLoopback(t)
	n := trials(t, "COMPARE_TRIALS", 4)
	quiet := 0
	for i := range n {
		base, next := runBaseline(t, target), runBaseline(t, target)
		c, err := compare.Reports(base, next, "base.json", "new.json", compare.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if c.Summary.Compared != 3 || c.Summary.Unmatched != 0 || c.Summary.NotJudged != 0 {
			t.Fatalf("trial %d: %+v, want 3 tests compared and judged", i+1, c.Summary)
		}
		if c.Summary.Regressed == 0 && c.Summary.Improved == 0 {
			quiet++
		}
		t.Logf("trial %d: %s", i+1, verdicts(c))
	}
	t.Logf("no significant change in %d of %d trials", quiet, n)
	if quiet*100 < n*95 {
		t.Errorf("no significant change in %d of %d trials, want at least 95%%", quiet, n)
	}
}

// TestCompareDelayedVM: with 1 ms added from host 0 to host 1 (the
// responder's answers to the requester, rxe0 -> rxe1) the latency tests
// of the same scenario regress, in every trial (COMPARE_DELAY_TRIALS).
func TestCompareDelayedVM(t *testing.T) {
	target := vmLoopback(t)
	n := trials(t, "COMPARE_DELAY_TRIALS", 1)
	for i := range n {
		base := runBaseline(t, target)
		var next *report.Report
		t.Run("delayed", func(t *testing.T) {
			rdmatest.Fault(t, "path-delay", "0", "1", "1")
			next = runBaseline(t, target)
		})
		c, err := compare.Reports(base, next, "base.json", "new.json", compare.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("trial %d: %s", i+1, verdicts(c))
		for _, r := range c.Runs {
			if r.Key.Measure == "latency" && r.Verdict != compare.Regressed {
				t.Errorf("trial %d: %s is %s with 1 ms added, want regressed", i+1, r.Key, r.Verdict)
			}
		}
	}
}
