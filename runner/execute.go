package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmarun/rdmarun/rdma"

	"github.com/rdmarun/rdmarun/runner/report"
)

// Options control how a scenario executes.
type Options struct {
	Tool string // "rdmarun <version>", for the report
	File string
	// Progress, when set, is called before and after each run (for a
	// terminal progress line or plain CI log lines). A before-call's run
	// has no Status yet; an after-call's run is the one the report
	// holds, once per run that ran or errored (a skipped run has no
	// calls). ExecuteFleet calls it only after each run, as pairs run at
	// once; never two calls at a time. done counts the runs finished,
	// those kept from Resume included, so a resumed run counts on from
	// them (7/18 for its first after 6 kept).
	Progress func(done, total int, run *report.Run)
	// Begun, when set, is called once before the first run with the
	// report as it starts: its schema, tool, scenario, file and start
	// set, its runs not yet (a runs file's header is written from it).
	Begun func(rep *report.Report)
	// Resume holds the runs of an interrupted run of the same scenario,
	// as a runs file holds them (report.ReadRuns). Their passed and
	// failed runs are kept as they are, with no Progress call, and only
	// the others run: in a single pair the missing and errored indices,
	// in a fleet the pairs not done (a pair partly done runs again
	// whole). The report is then the one an uninterrupted run would have
	// made of the same results. A run that does not match the scenario
	// makes Execute fail, naming it.
	Resume []report.Run
}

// Execute runs every expanded run of sc on target, judges each run's
// thresholds, and returns the report. It stops early, marking what is
// left as skipped, when a failing case has abort_on_fail or ctx ends
// (Ctrl-C); the report then says why. Conditions that read the baseline
// are judged after the last run (judgeBaseline), so abort_on_fail does
// not stop on them. Execute itself fails only when the scenario has no
// runs, names hosts: (a fleet runs with ExecuteFleet) or has a baseline
// that was not read.
func Execute(ctx context.Context, sc *Scenario, target Target, opt Options) (*report.Report, error) {
	if sc.Fleet != nil {
		return nil, errNotOnePair
	}
	runs := sc.Runs()
	if len(runs) == 0 {
		return nil, ErrNoRuns
	}
	if err := checkDeviceLimits(sc, target); err != nil {
		return nil, err
	}
	if b := sc.Baseline; b != nil && b.Report == nil {
		return nil, fmt.Errorf("the baseline %s was not read; load the scenario with Load, or set Baseline.Report", b.File)
	}
	if err := checkResume(runs, opt.Resume, nil); err != nil {
		return nil, err
	}
	resumed := resumedByIndex(opt.Resume)
	rep := &report.Report{
		Schema: report.Schema, Tool: opt.Tool, Scenario: sc.Name, File: opt.File,
		Peer: target.Describe(), Started: time.Now(),
	}
	if opt.Begun != nil {
		opt.Begun(rep)
	}
	link := target.LinkGbps()
	for i, r := range runs {
		out := report.Run{Case: r.Case, Index: r.Index, Repeat: r.Repeat, Spec: r.Spec}
		if rep.StopReason != "" {
			out.Status = report.Skipped
			rep.Runs = append(rep.Runs, out)
			continue
		}
		if got, ok := resumed[i]; ok {
			if aborts(r, &got, endJudged) {
				rep.Stopped = fmt.Sprintf("case %s has abort_on_fail and run %d %s", r.Case, r.Index, got.Status)
				rep.StopReason = report.StopAbortOnFail
			}
			rep.Runs = append(rep.Runs, got)
			continue
		}
		if i > 0 && r.Repeat != runs[i-1].Repeat {
			passGap(ctx, sc.RepeatGap)
		}
		if opt.Progress != nil {
			opt.Progress(i, len(runs), &out)
		}
		start := time.Now()
		out.Started = start
		res, err := target.Run(ctx, r.Spec)
		out.Seconds = time.Since(start).Seconds()
		now := r
		if sc.Baseline != nil {
			now = withoutBaseline(r)
		}
		switch e := settle(ctx, &out, now, res, err, link); {
		case e == endInterrupted:
			rep.Stopped = "interrupted (" + ctx.Err().Error() + ")"
			rep.StopReason = report.StopInterrupted
		case e == endEnvironment:
			// Every later run would fail the same way.
			rep.Stopped = "environment unusable: " + err.Error()
			rep.StopReason = report.StopEnvironment
		case aborts(r, &out, e):
			rep.Stopped = fmt.Sprintf("case %s has abort_on_fail and run %d %s", r.Case, r.Index, out.Status)
			rep.StopReason = report.StopAbortOnFail
		}
		rep.Runs = append(rep.Runs, out)
		if opt.Progress != nil {
			opt.Progress(i+1, len(runs), &rep.Runs[len(rep.Runs)-1])
		}
	}
	if sc.Baseline != nil {
		judgeBaseline(rep, runs, sc.Baseline, link)
	}
	rep.Finished = time.Now()
	rep.Tally()
	diagnose(ctx, rep, target)
	return rep, nil
}

// judgeRun records a finished run's result on out and judges r's
// thresholds against it: passed when every one holds. linkGbps is the
// port's rate for link_gbps, 0 when it is not known.
func judgeRun(out *report.Run, r Run, res *rdma.Result, linkGbps float64) {
	out.Result = res
	out.Spec = res.Spec
	out.Status = report.Passed
	env := NewEnv(res, linkGbps)
	for _, t := range r.Pass {
		v := verdict(t, env)
		if !v.Passed {
			out.Status = report.Failed
		}
		out.Verdicts = append(out.Verdicts, v)
	}
}

// verdict judges one condition on env, with the values it read: the one
// place a verdict is made, whether the run just ended or the baseline's
// conditions are judged after the last.
func verdict(t *Threshold, env Env) report.Verdict {
	v := report.Verdict{Expr: t.Source(), Values: t.Values(env)}
	ok, err := t.Eval(env)
	switch {
	case err != nil:
		v.Error = err.Error()
	case ok:
		v.Passed = true
	}
	return v
}

// ExitStatus maps a report to rdmarun's exit codes: 0 all passed, 1 a
// threshold failed, 4 the environment is unusable (no device, memlock
// limit, responder unreachable), 5 a run did not finish or the scenario
// was interrupted. Errors outrank failures: a run that did not finish
// says less about the fabric than one that did.
//
// A fleet run (rep.Fleet set) reads differently, as one bad host must not
// hide what the others found: 1 when any run failed a threshold or did
// not finish (an unreachable host's pairs included) or a suspect is
// named, 5 when interrupted, and 4 only when no pair could run at all
// (every run an environment error, e.g. no host answered).
func ExitStatus(rep *report.Report) int {
	if rep.Fleet != nil {
		return fleetExitStatus(rep)
	}
	switch {
	case rep.StopReason == report.StopEnvironment:
		return 4
	case rep.Summary.Errors > 0 || rep.StopReason == report.StopInterrupted:
		return 5
	case rep.Summary.Failed > 0:
		return 1
	}
	return 0
}

// passGap waits out the pause between two passes of a repeated scenario,
// or until ctx ends (the next run then reports the interruption).
func passGap(ctx context.Context, gap time.Duration) {
	if gap <= 0 {
		return
	}
	t := time.NewTimer(gap)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
