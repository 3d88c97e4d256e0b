package runner

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/rdmarun/rdmarun/runner/compare"
	"github.com/rdmarun/rdmarun/runner/report"
)

// Baseline is the report of an earlier run of the scenario that its
// conditions compare with: baseline: in the file, or --baseline.
type Baseline struct {
	// File is where the report is. Parse keeps it as written; Load
	// resolves a relative one against the scenario's directory, while a
	// --baseline path is the working directory's, as given.
	File string
	// Options are the comparison's smallest effect and confidence
	// (min_effect and confidence; runner/compare's defaults otherwise).
	Options compare.Options
	// Report is the baseline, read by Load; Parse reads no file, so its
	// caller sets it before Execute.
	Report *report.Report
}

// BaselineValues are the baseline's values of a run's test, which a
// condition reads as baseline.NAME in the unit of NAME: `bw_gbps >=
// baseline.bw_gbps * 0.95`. Each is the mean over the baseline's runs of
// the test that finished (its repeats), as runner/compare's point
// estimate of a percentile is. The fields are float64 fields of Env,
// tagged alike; envNames documents them.
type BaselineValues struct {
	Min       float64 `expr:"min"`
	Max       float64 `expr:"max"`
	Mean      float64 `expr:"mean"`
	Stddev    float64 `expr:"stddev"`
	P50       float64 `expr:"p50"`
	P90       float64 `expr:"p90"`
	P99       float64 `expr:"p99"`
	P999      float64 `expr:"p999"`
	P9999     float64 `expr:"p9999"`
	OneWayP50 float64 `expr:"one_way_p50"`
	OneWayP99 float64 `expr:"one_way_p99"`
	BwGbps    float64 `expr:"bw_gbps"`
	BwGiB     float64 `expr:"bw_gib"`
	MsgRate   float64 `expr:"msg_rate"`
}

// baselineFields maps a name of BaselineValues to its field.
var baselineFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[BaselineValues]()
	for i := range t.NumField() {
		m[t.Field(i).Tag.Get("expr")] = i
	}
	return m
}()

func (b BaselineValues) value(name string) (any, bool) {
	i, ok := baselineFields[name]
	if !ok {
		return nil, false
	}
	return reflect.ValueOf(b).Field(i).Interface(), true
}

// meanValues is each baseline value's mean over the runs' environments.
func meanValues(envs []Env) BaselineValues {
	var b BaselineValues
	v := reflect.ValueOf(&b).Elem()
	for name, i := range baselineFields {
		var sum float64
		for _, e := range envs {
			x, _ := e.Value(name)
			f, _ := x.(float64)
			sum += f
		}
		v.Field(i).SetFloat(sum / float64(len(envs)))
	}
	return b
}

// baselineMatch is what the baseline says of one run's test.
type baselineMatch struct {
	file string
	key  compare.Key
	// err says why the baseline cannot judge the test at all: it has
	// no run of it.
	err error
	// finished says the baseline finished a run of the test, so that the
	// Env's Baseline holds its values.
	finished bool
	// change is the comparison of the test's runs, the baseline's with
	// this report's; nil with err.
	change *compare.RunChange
}

var errNoBaseline = errors.New("no baseline to compare with; give the scenario baseline: FILE, or run it with --baseline FILE")

func noBaseline(string) (bool, error) { return false, errNoBaseline }

// attach makes the match what e's regressed(), improved() and baseline
// names read.
func (m *baselineMatch) attach(e *Env) {
	e.baseline = m
	ask := func(fn string, want compare.Verdict) func(string) (bool, error) {
		return func(metric string) (bool, error) {
			v, err := m.verdict(comparedCall{fn, metric})
			return v == want, err
		}
	}
	e.Regressed, e.Improved = ask("regressed", compare.Regressed), ask("improved", compare.Improved)
}

// baselineError says why a baseline name cannot be judged, or nil when
// it can (or name is not the baseline's).
func (e Env) baselineError(name string) error {
	if !strings.HasPrefix(name, "baseline.") {
		return nil
	}
	switch m := e.baseline; {
	case m == nil:
		return fmt.Errorf("%s: %w", name, errNoBaseline)
	case m.err != nil:
		return fmt.Errorf("%s: %w", name, m.err)
	case !m.finished:
		return fmt.Errorf("%s: not judged: no run of %s finished in the baseline %s", name, m.key, m.file)
	}
	return nil
}

func (e Env) compareVerdict(c comparedCall) (compare.Verdict, error) {
	return e.baseline.verdict(c)
}

// verdict is runner/compare's verdict on the call's metric: regressed,
// improved or no significant change. A metric it could not judge (one
// run a side of a rate, too few samples for a tail, other devices) is an
// error, so that `not regressed(bw_gbps)` never passes unjudged.
func (m *baselineMatch) verdict(c comparedCall) (compare.Verdict, error) {
	switch {
	case m == nil:
		return "", fmt.Errorf("%s: %w", c, errNoBaseline)
	case m.err != nil:
		return "", fmt.Errorf("%s: %w", c, m.err)
	}
	name, _ := compareName(c.metric)
	for _, mc := range m.change.Metrics {
		if mc.Name != name {
			continue
		}
		switch mc.Verdict {
		case compare.Regressed, compare.Improved, compare.Unchanged:
			return mc.Verdict, nil
		}
		return "", fmt.Errorf("%s: not judged against the baseline %s: %s", c, m.file, mc.Reason)
	}
	// Without metrics, a test is regressed when its runs finished in the
	// baseline and some did not here.
	if len(m.change.Metrics) == 0 && m.change.Verdict == compare.Regressed {
		return compare.Regressed, nil
	}
	reason := m.change.Reason
	if reason == "" {
		reason = "the comparison has no " + c.metric
	}
	return "", fmt.Errorf("%s: not judged against the baseline %s: %s", c, m.file, reason)
}

// ratios adds, for a report, the comparison's new/base ratio of the
// metric and its interval: what its verdict was drawn from.
func (m *baselineMatch) ratios(metric string, out map[string]float64) {
	if m == nil || m.change == nil {
		return
	}
	name, _ := compareName(metric)
	i := slices.IndexFunc(m.change.Metrics, func(mc compare.MetricChange) bool { return mc.Name == name })
	if i < 0 {
		return
	}
	mc := m.change.Metrics[i]
	for key, v := range map[string]float64{"ratio": mc.Ratio, "ratio_low": mc.Low, "ratio_high": mc.High} {
		// A report's JSON holds no NaN, and 0 is an interval not drawn.
		if v > 0 && !math.IsInf(v, 0) {
			out[key+"("+metric+")"] = v
		}
	}
}

// withoutBaseline is the run with only the conditions that can be judged
// as soon as it ends: those reading the baseline wait for the last run.
func withoutBaseline(r Run) Run {
	r.Pass = slices.DeleteFunc(slices.Clone(r.Pass), (*Threshold).usesBaseline)
	return r
}

// judgeBaseline judges, once every run has run, the conditions that read
// the baseline, and adds their verdicts among the others in the case's
// order. A test's comparison takes all its repeats, so it is known only
// after the last one; it is the comparison `rdmarun compare BASELINE
// REPORT` makes of the finished report. runs is the expansion rep.Runs
// follows, run for run.
func judgeBaseline(rep *report.Report, runs []Run, b *Baseline, linkGbps float64) {
	cmp, cmpErr := compare.Reports(b.Report, rep, b.File, "this report", b.Options)
	changes := map[compare.Key]*compare.RunChange{}
	if cmpErr == nil {
		for i := range cmp.Runs {
			changes[cmp.Runs[i].Key] = &cmp.Runs[i]
		}
	}
	finished := map[compare.Key][]Env{}
	for _, r := range b.Report.Runs {
		if r.Result != nil && (r.Status == report.Passed || r.Status == report.Failed) {
			k := compare.KeyOf(r)
			finished[k] = append(finished[k], NewEnv(r.Result, 0))
		}
	}
	for i := range min(len(rep.Runs), len(runs)) {
		out, r := &rep.Runs[i], runs[i]
		judged := out.Status == report.Passed || out.Status == report.Failed
		if !judged || out.Result == nil || !slices.ContainsFunc(r.Pass, (*Threshold).usesBaseline) {
			continue
		}
		m := &baselineMatch{file: b.File, key: compare.KeyOf(*out)}
		m.change = changes[m.key]
		switch {
		case cmpErr != nil:
			m.err = fmt.Errorf("not judged: %w", cmpErr)
		case m.change == nil:
			m.err = fmt.Errorf("not judged: the baseline %s (scenario %s) has no run matching %s", b.File, b.Report.Scenario, m.key)
		}
		env := NewEnv(out.Result, linkGbps)
		if envs := finished[m.key]; len(envs) > 0 {
			env.Baseline, m.finished = meanValues(envs), true
		}
		m.attach(&env)
		rejudge(out, r, env)
	}
}

// rejudge adds the verdicts of r's baseline conditions to those judged
// when the run ended, in the order of r.Pass, and settles the status.
func rejudge(out *report.Run, r Run, env Env) {
	var vs []report.Verdict
	j := 0
	out.Status = report.Passed
	for _, t := range r.Pass {
		var v report.Verdict
		switch {
		case t.usesBaseline():
			v = verdict(t, env)
		case j < len(out.Verdicts):
			v = out.Verdicts[j]
			j++
		}
		if !v.Passed {
			out.Status = report.Failed
		}
		vs = append(vs, v)
	}
	out.Verdicts = vs
}
