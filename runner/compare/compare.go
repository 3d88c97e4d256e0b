// Package compare answers "is NEW worse than BASE?" for two reports of
// rdmarun runs, with a confidence interval per metric rather than a ratio
// of two numbers. runner/README.md argues the method.
package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// Schema names the JSON layout of a Comparison.
const Schema = "rdmarun.compare/v1"

// Options are what the user decides: how large a change matters and how
// sure the verdict must be.
type Options struct {
	// MinEffect is the smallest relative change that matters (0.05: 5%).
	// A change whose interval reaches inside it is never a regression.
	MinEffect float64 `json:"min_effect"`
	// Confidence of each interval (0.95).
	Confidence float64 `json:"confidence"`
	// Resamples is the bootstrap's replicates per metric.
	Resamples int `json:"resamples"`
	// Seed makes the resampling, and so the verdicts, repeatable.
	Seed uint64 `json:"seed"`
}

// DefaultOptions are a 5% smallest effect at 95% confidence.
func DefaultOptions() Options {
	return Options{MinEffect: 0.05, Confidence: 0.95, Resamples: 2000, Seed: 1}
}

// Validate says which option is out of range and what it may be.
func (o Options) Validate() error {
	switch {
	case !(o.MinEffect >= 0 && o.MinEffect < 1):
		return fmt.Errorf("smallest effect %g: want 0 <= effect < 1 (0.05 is 5%%)", o.MinEffect)
	case !(o.Confidence >= 0.5 && o.Confidence < 1):
		return fmt.Errorf("confidence %g: want 0.5 <= confidence < 1 (0.95 is 95%%)", o.Confidence)
	case o.Resamples < 100 || o.Resamples > 1_000_000:
		return fmt.Errorf("resamples %d: want 100..1000000", o.Resamples)
	}
	return nil
}

// Verdict is what a change is judged to be.
type Verdict string

// The verdicts, worst first.
const (
	Regressed Verdict = "regressed"
	// Incomparable: the runs differ in what they measured (devices), so
	// a change says nothing about the fabric.
	Incomparable Verdict = "incomparable"
	Improved     Verdict = "improved"
	Unchanged    Verdict = "no_significant_change"
	// NotJudged: too few samples or repeats for an interval; the values
	// are shown, and the reason says what would make them judgeable.
	NotJudged Verdict = "not_judged"
)

func (v Verdict) rank() int {
	return slices.Index([]Verdict{Regressed, Incomparable, Improved, Unchanged, NotJudged}, v)
}

// Key is what makes two runs the same test: a run of BASE is compared
// with the runs of NEW that have its key.
type Key struct {
	Case    string `json:"case"`
	Op      string `json:"op"`
	Measure string `json:"measure"`
	Size    int    `json:"size_bytes"`
	QPs     int    `json:"qps"`
	Mode    string `json:"mode"`
	QPType  string `json:"qp_type"`
	// Pair is a fleet run's pair, "A->B"; empty otherwise.
	Pair string `json:"pair,omitempty"`
}

func (k Key) String() string {
	s := fmt.Sprintf("%s %s %s %d B qps=%d %s", k.Case, k.Op, k.Measure, k.Size, k.QPs, k.Mode)
	if k.QPType != "rc" {
		s += " " + k.QPType
	}
	if k.Pair != "" {
		s += " [" + k.Pair + "]"
	}
	return s
}

// KeyOf is the key a run is matched by, so that a scenario judging its
// runs against a baseline matches them as this package does.
func KeyOf(r report.Run) Key {
	k := Key{Case: r.Case, Op: r.Spec.Op.String(), Measure: r.Spec.Measure.String(), Size: r.Spec.Size,
		QPs: r.Spec.QPs, Mode: r.Spec.Mode.String(), QPType: r.Spec.QPType.String()}
	if r.Pair != nil {
		k.Pair = r.Pair.A + "->" + r.Pair.B
	}
	return k
}

// Comparison is the answer for two reports.
type Comparison struct {
	Schema string  `json:"schema"`
	Base   Source  `json:"base"`
	New    Source  `json:"new"`
	Opts   Options `json:"options"`
	// Runs are the matched tests, regressions first, then in BASE's order.
	Runs []RunChange `json:"runs"`
	// Unmatched are tests that only one of the reports has.
	Unmatched []Unmatched `json:"unmatched,omitempty"`
	// Suspects, for fleet reports, are what the regressed pairs blame, by
	// the fleet's own rule: a host whose pairs regressed with most of its
	// partners, else each regressed path as a link.
	Suspects []fleet.Suspect `json:"suspects,omitempty"`
	Summary  Summary         `json:"summary"`
}

// Source names a compared report.
type Source struct {
	File     string `json:"file"`
	Scenario string `json:"scenario"`
	Started  string `json:"started"`
}

// RunChange is one test in both reports.
type RunChange struct {
	Key Key `json:"key"`
	// BaseRuns and NewRuns are how many runs (repeats) of the test each
	// report holds that finished; BaseErrors and NewErrors those that did
	// not.
	BaseRuns   int `json:"base_runs"`
	NewRuns    int `json:"new_runs"`
	BaseErrors int `json:"base_errors,omitempty"`
	NewErrors  int `json:"new_errors,omitempty"`
	// Verdict is the worst of the metrics'; Reason says why when it is
	// not a metric's (errors, devices).
	Verdict Verdict        `json:"verdict"`
	Reason  string         `json:"reason,omitempty"`
	Metrics []MetricChange `json:"metrics"`
	// pair is a fleet run's pair in NEW's hosts.
	pair *fleet.Pair
}

// MetricChange is one metric of a test: both values, new/base with its
// interval, and the verdict.
type MetricChange struct {
	Name string `json:"name"` // p50, p99, p99.9 (RTT), bw, msg_rate
	// Unit of Base and New: ns (round-trip time), bytes_per_second or
	// messages_per_second.
	Unit string  `json:"unit"`
	Base float64 `json:"base"`
	New  float64 `json:"new"`
	// Ratio is New/Base; Low and High bound it at the confidence, absent
	// when not judged.
	Ratio   float64 `json:"ratio"`
	Low     float64 `json:"low,omitempty"`
	High    float64 `json:"high,omitempty"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
	// HigherIsWorse is true for latencies.
	HigherIsWorse bool `json:"higher_is_worse"`
	// Method is where the interval came from: "runs" (the spread between
	// the repeats, both sides run two or more times) or "samples"
	// (resampling the samples inside the runs, a latency with one run on
	// a side, which cannot see how much runs differ).
	Method string `json:"method,omitempty"`
}

// Unmatched is a test in one report only.
type Unmatched struct {
	Key Key    `json:"key"`
	In  string `json:"in"` // base or new
}

// Summary counts the matched tests by verdict.
type Summary struct {
	Compared     int `json:"compared"`
	Regressed    int `json:"regressed"`
	Improved     int `json:"improved"`
	Unchanged    int `json:"no_significant_change"`
	NotJudged    int `json:"not_judged"`
	Incomparable int `json:"incomparable"`
	Unmatched    int `json:"unmatched"`
}

// ErrSchema is returned when the reports' layouts differ.
var ErrSchema = errors.New("the reports have different schema versions")

// Reports compares NEW with BASE.
func Reports(base, next *report.Report, baseFile, newFile string, o Options) (*Comparison, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if base.Schema != next.Schema {
		return nil, fmt.Errorf("%w: %s is %s, %s is %s; compare reports written by the same rdmarun release", ErrSchema, baseFile, base.Schema, newFile, next.Schema)
	}
	c := &Comparison{Schema: Schema, Opts: o,
		Base: Source{File: baseFile, Scenario: base.Scenario, Started: base.Started.UTC().Format("2006-01-02 15:04:05Z")},
		New:  Source{File: newFile, Scenario: next.Scenario, Started: next.Started.UTC().Format("2006-01-02 15:04:05Z")}}
	baseRuns, baseOrder := group(base)
	newRuns, newOrder := group(next)
	r := rand.New(rand.NewPCG(o.Seed, 0x72646d6172756e))
	for _, k := range baseOrder {
		nr, ok := newRuns[k]
		if !ok {
			c.Unmatched = append(c.Unmatched, Unmatched{Key: k, In: "base"})
			continue
		}
		rc := compareRuns(r, k, baseRuns[k], nr, o)
		if p := nr[0].Pair; p != nil {
			rc.pair = &p.Pair
		}
		c.Runs = append(c.Runs, rc)
	}
	for _, k := range newOrder {
		if _, ok := baseRuns[k]; !ok {
			c.Unmatched = append(c.Unmatched, Unmatched{Key: k, In: "new"})
		}
	}
	slices.SortStableFunc(c.Runs, func(a, b RunChange) int { return a.Verdict.rank() - b.Verdict.rank() })
	c.tally()
	if next.Fleet != nil {
		s, err := suspects(next.Fleet.Hosts, c.Runs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", newFile, err)
		}
		c.Suspects = s
	}
	return c, nil
}

// suspects blames the regressed pairs as a fleet run blames its bad
// ones (fleet.Suspects): each test is a metric, bad where it regressed.
func suspects(hosts []fleet.Host, runs []RunChange) ([]fleet.Suspect, error) {
	var outcomes []fleet.Outcome
	for _, r := range runs {
		if r.pair == nil {
			continue
		}
		k := r.Key
		k.Pair = ""
		outcomes = append(outcomes, fleet.Outcome{Pair: *r.pair, Metric: k.String(), OK: r.Verdict != Regressed, Value: 1})
	}
	if len(outcomes) == 0 {
		return nil, nil
	}
	return fleet.Suspects(hosts, outcomes, 0)
}

// group collects a report's runs by key, keys in first-seen order. A
// fleet's confirmation runs are left out: they run only where the
// schedule's run failed, so they would weigh a pair by its failures.
func group(rep *report.Report) (map[Key][]report.Run, []Key) {
	runs := map[Key][]report.Run{}
	var order []Key
	for _, run := range rep.Runs {
		if run.Status == report.Skipped || (run.Pair != nil && run.Pair.Attempt > 0) {
			continue
		}
		k := KeyOf(run)
		if _, ok := runs[k]; !ok {
			order = append(order, k)
		}
		runs[k] = append(runs[k], run)
	}
	return runs, order
}

func (c *Comparison) tally() {
	s := Summary{Compared: len(c.Runs), Unmatched: len(c.Unmatched)}
	for _, r := range c.Runs {
		switch r.Verdict {
		case Regressed:
			s.Regressed++
		case Improved:
			s.Improved++
		case Unchanged:
			s.Unchanged++
		case NotJudged:
			s.NotJudged++
		case Incomparable:
			s.Incomparable++
		}
	}
	c.Summary = s
}

// finished are the runs that have a result, and how many did not.
func finished(runs []report.Run) (ok []*rdma.Result, errored int) {
	for _, r := range runs {
		if r.Result == nil || r.Status == report.Errored {
			errored++
			continue
		}
		ok = append(ok, r.Result)
	}
	return ok, errored
}

func compareRuns(r *rand.Rand, k Key, base, next []report.Run, o Options) RunChange {
	b, be := finished(base)
	n, ne := finished(next)
	rc := RunChange{Key: k, BaseRuns: len(b), NewRuns: len(n), BaseErrors: be, NewErrors: ne}
	switch {
	case ne > 0 && be == 0:
		rc.Verdict, rc.Reason = Regressed, fmt.Sprintf("%d of %d runs did not finish in new (%s), none in base", ne, len(next), firstError(next))
		return rc
	case len(b) == 0 || len(n) == 0:
		rc.Verdict, rc.Reason = NotJudged, "no finished run in one of the reports"
		return rc
	}
	if bd, nd := devices(b), devices(n); bd != nd {
		rc.Verdict, rc.Reason = Incomparable, fmt.Sprintf("devices differ: base ran on %s, new on %s", bd, nd)
		return rc
	}
	switch k.Measure {
	case rdma.MeasureLatency.String():
		if !hasSamples(b) || !hasSamples(n) {
			rc.Verdict, rc.Reason = NotJudged, "a run has no latency samples (latency.buckets): reports written before rdmarun kept them cannot be compared"
			return rc
		}
		for _, q := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p99", 0.99}, {"p99.9", 0.999}} {
			rc.Metrics = append(rc.Metrics, latencyChange(r, q.name, q.q, b, n, o))
		}
	case rdma.MeasureBandwidth.String():
		rc.Metrics = append(rc.Metrics,
			rateChange("bw", "bytes_per_second", b, n, o, func(d rdma.Direction) float64 { return d.BytesPerSecond }),
			rateChange("msg_rate", "messages_per_second", b, n, o, func(d rdma.Direction) float64 { return d.MessagesPerSec }))
	default:
		rc.Verdict, rc.Reason = NotJudged, "measure "+k.Measure+" is not compared"
		return rc
	}
	rc.Verdict = NotJudged
	for _, m := range rc.Metrics {
		if m.Verdict.rank() < rc.Verdict.rank() {
			rc.Verdict = m.Verdict
		}
	}
	if ne > 0 || be > 0 {
		rc.Reason = fmt.Sprintf("runs that did not finish: %d in base, %d in new", be, ne)
	}
	return rc
}

func firstError(runs []report.Run) string {
	for _, r := range runs {
		if r.Error != "" {
			return r.Error
		}
	}
	return "no error recorded"
}

// devices names the devices a side's runs used, requester to responder.
func devices(runs []*rdma.Result) string {
	var seen []string
	for _, r := range runs {
		d := r.Requester.Device + " to " + r.Responder.Device
		if !slices.Contains(seen, d) {
			seen = append(seen, d)
		}
	}
	return strings.Join(seen, ", ")
}

// minTail is how many samples must lie above a quantile for its interval
// to mean anything: p99 needs 1,000 samples, p99.9 10,000.
const minTail = 10

// minRepeats is how many runs a side needs for an interval from the
// spread between runs; a rate always needs it, since a run gives one.
const minRepeats = 2

func latencyChange(r *rand.Rand, name string, q float64, base, next []*rdma.Result, o Options) MetricChange {
	m := MetricChange{Name: name, Unit: "ns", HigherIsWorse: true}
	b, bn := histograms(base)
	n, nn := histograms(next)
	bs, ns := quantileOver{b, q}, quantileOver{n, q}
	m.Base, m.New = bs.point(), ns.point()
	m.Ratio = m.New / m.Base
	if need := uint64(math.Round(minTail / (1 - q))); bn < need || nn < need {
		m.Verdict, m.Reason = NotJudged, fmt.Sprintf("%s needs %d samples a run (iterations), the runs have %d and %d", name, need, bn, nn)
		return m
	}
	if len(b) >= minRepeats && len(n) >= minRepeats {
		var iv interval
		m.Base, m.New, iv = betweenRuns(bs.each(), ns.each(), o.Confidence)
		m.Method = "runs"
		m.judge(iv, o.MinEffect)
		return m
	}
	m.Method = "samples"
	m.judge(ratioInterval(r, bs, ns, o.Resamples, o.Confidence), o.MinEffect)
	return m
}

// hasSamples reports whether every run kept its latency samples.
func hasSamples(runs []*rdma.Result) bool {
	for _, r := range runs {
		if r.Latency == nil || len(r.Latency.Buckets) == 0 {
			return false
		}
	}
	return true
}

// histograms are the runs' RTT samples and the fewest samples in a run.
func histograms(runs []*rdma.Result) ([]histogram, uint64) {
	var out []histogram
	fewest := ^uint64(0)
	for _, r := range runs {
		h := newHistogram(r.Latency.Buckets)
		fewest = min(fewest, h.count())
		out = append(out, h)
	}
	return out, fewest
}

func rateChange(name, unit string, base, next []*rdma.Result, o Options, of func(rdma.Direction) float64) MetricChange {
	m := MetricChange{Name: name, Unit: unit}
	b, n := rates(base, of), rates(next, of)
	if slices.Min(b) <= 0 || slices.Min(n) <= 0 {
		m.Verdict, m.Reason = NotJudged, "a run moved nothing"
		return m
	}
	if len(b) < minRepeats || len(n) < minRepeats {
		m.Base, m.New = b[0], n[0]
		m.Ratio = m.New / m.Base
		m.Verdict, m.Reason = NotJudged, fmt.Sprintf("a rate's interval needs %d runs a side (repeat: %d or more), there are %d and %d", minRepeats, minRepeats, len(b), len(n))
		return m
	}
	var iv interval
	m.Base, m.New, iv = betweenRuns(b, n, o.Confidence)
	m.Method = "runs"
	m.judge(iv, o.MinEffect)
	return m
}

// rates is each run's rate summed over its directions.
func rates(runs []*rdma.Result, of func(rdma.Direction) float64) []float64 {
	var out []float64
	for _, r := range runs {
		var v float64
		if r.Bandwidth != nil {
			for _, d := range r.Bandwidth.Directions {
				v += of(d)
			}
		}
		out = append(out, v)
	}
	return out
}

// judge sets the verdict from the interval: worse only when the whole
// interval lies beyond the smallest effect, so a change smaller than it is
// never a regression however sure the interval.
func (m *MetricChange) judge(iv interval, minEffect float64) {
	m.Ratio, m.Low, m.High = iv.Ratio, iv.Low, iv.High
	worse, better := iv.Low > 1+minEffect, iv.High < 1-minEffect
	if !m.HigherIsWorse {
		worse, better = iv.High < 1-minEffect, iv.Low > 1+minEffect
	}
	switch {
	case worse:
		m.Verdict = Regressed
	case better:
		m.Verdict = Improved
	default:
		m.Verdict = Unchanged
	}
}
