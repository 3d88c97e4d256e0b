package runner

import (
	"fmt"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/runner/report"
)

// resumable reports whether a run read back from a runs file is kept by
// a resumed run. Passed and failed runs are what the fabric did; an
// errored run (a host that did not answer, a set-up that failed, a test
// that did not finish) is run again, as the operator resumes after
// fixing what made it error.
func resumable(r *report.Run) bool {
	return r.Status == report.Passed || r.Status == report.Failed
}

// checkResume holds the resumed runs to the scenario's: each names a run
// of it (its index, case, pass and what its spec chose), and, in a fleet,
// a pair of its hosts. The error names the first that does not.
func checkResume(runs []Run, resumed []report.Run, fl *Fleet) error {
	for n := range resumed {
		got := &resumed[n]
		at := fmt.Sprintf("runner: --resume: run %d of the file (case %s, index %d)", n+1, got.Case, got.Index)
		if got.Index < 0 || got.Index >= len(runs) {
			return fmt.Errorf("%s: the scenario has %d runs: the file is of another scenario, or of this one edited since", at, len(runs))
		}
		want := runs[got.Index]
		g, w := got.Spec.TestSpec, want.Spec.TestSpec
		switch {
		case got.Case != want.Case:
			return fmt.Errorf("%s: the scenario's run %d is of case %s: the file is of another scenario, or of this one edited since", at, got.Index, want.Case)
		case fl == nil && got.Pair != nil:
			return fmt.Errorf("%s: a fleet's run (pair %s-%s), and the scenario runs one pair", at, got.Pair.A, got.Pair.B)
		case fl != nil && got.Pair == nil:
			return fmt.Errorf("%s: a single pair's run, and the scenario is a fleet", at)
		case got.Repeat != want.Repeat:
			return fmt.Errorf("%s: repeat %d, the scenario's is %d", at, got.Repeat, want.Repeat)
		case g.Op != w.Op || g.Measure != w.Measure || g.Mode != w.Mode || g.QPType != w.QPType || g.Size != w.Size || g.QPs != w.QPs:
			return fmt.Errorf("%s: spec %s %s %s %s size %d qps %d, the scenario's is %s %s %s %s size %d qps %d: the case was edited since",
				at, g.Op, g.Measure, g.Mode, g.QPType, g.Size, g.QPs, w.Op, w.Measure, w.Mode, w.QPType, w.Size, w.QPs)
		case fl != nil:
			p := got.Pair.Pair
			for _, nic := range []struct {
				n    fleet.NIC
				name string
			}{{p.A, got.Pair.A}, {p.B, got.Pair.B}} {
				if nic.n.Host < 0 || nic.n.Host >= len(fl.Hosts) || fl.Hosts[nic.n.Host].Name != hostOf(nic.name) {
					return fmt.Errorf("%s: pair %s-%s names host %d as %s, not a host of this fleet in that place", at, got.Pair.A, got.Pair.B, nic.n.Host, nic.name)
				}
			}
		}
	}
	return nil
}

// hostOf drops a rail NIC name's /device.
func hostOf(nic string) string {
	for i := len(nic) - 1; i >= 0; i-- {
		if nic[i] == '/' {
			return nic[:i]
		}
	}
	return nic
}

// resumedByIndex keeps a single pair's resumable runs by index; a run
// twice in the file (a resumed run resumed again) keeps its last line.
func resumedByIndex(resumed []report.Run) map[int]report.Run {
	m := map[int]report.Run{}
	for _, r := range resumed {
		if resumable(&r) {
			m[r.Index] = r
		}
	}
	return m
}

// pairAttempt is one pair's pass over the runs in a fleet: the first
// (attempt 0) or a confirmation.
type pairAttempt struct {
	pair    fleet.Pair
	attempt int
}

// resumedByPair groups a fleet's resumable runs by pair and attempt, then
// index. An errored run is dropped, which leaves its pair not done.
func resumedByPair(resumed []report.Run) map[pairAttempt]map[int]report.Run {
	m := map[pairAttempt]map[int]report.Run{}
	for _, r := range resumed {
		if !resumable(&r) {
			continue
		}
		k := pairAttempt{r.Pair.Pair, r.Pair.Attempt}
		if m[k] == nil {
			m[k] = map[int]report.Run{}
		}
		m[k][r.Index] = r
	}
	return m
}

// resumePair gives the pair's runs from the resumed ones when the pair
// was done: every run there, or there up to one that stopped the pair
// under abort_on_fail, the rest skipped as they were. A pair partly done
// is run again whole (nil): its runs share the pair's state (an abort,
// the gap between passes), and a pair is short next to a fleet.
func (c *coordinator) resumePair(p fleet.Pair, attempt int, where *report.PairRun) []pairResult {
	done := c.resumed[pairAttempt{p, attempt}]
	if done == nil {
		return nil
	}
	out := make([]pairResult, 0, len(c.runs))
	var aborted string
	for i, r := range c.runs {
		res := pairResult{setupHost: -1}
		if aborted != "" {
			res.run = report.Run{Case: r.Case, Index: r.Index, Repeat: r.Repeat, Spec: r.Spec, Pair: where, Status: report.Skipped, Error: aborted}
			out = append(out, res)
			continue
		}
		got, ok := done[i]
		if !ok {
			return nil
		}
		got.Pair = where
		res.run = got
		if aborts(r, &res.run, endJudged) {
			aborted = abortedOnPair(r, got.Status)
		}
		out = append(out, res)
	}
	return out
}

// keptRuns is how many runs of pairs' attempt the resumed ones give
// (resumePair), skipped ones aside as they have no progress call: the
// progress count starts past them, so a resumed run's lines count on
// from where the interrupted one stopped.
func (c *coordinator) keptRuns(pairs []fleet.Pair, attempt int) int {
	if len(c.resumed) == 0 {
		return 0
	}
	n := 0
	for _, p := range pairs {
		if c.resumed[pairAttempt{p, attempt}] == nil {
			continue
		}
		for _, res := range c.resumePair(p, attempt, nil) {
			if res.run.Status != report.Skipped {
				n++
			}
		}
	}
	return n
}
