package runner

import (
	"bytes"
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/compare"
	"github.com/rdmarun/rdmarun/runner/report"
)

type answer = func(rdma.Test) (*rdma.Result, error)

// latencyOf answers latency runs with 2,000 round trips of 10 us plus an
// exponential 1 us tail, times factor, from a stream seeded by seed and
// the call: two answers built alike answer alike, run for run.
func latencyOf(seed uint64, factor float64) answer {
	call := uint64(0)
	return func(spec rdma.Test) (*rdma.Result, error) {
		call++
		r := rand.New(rand.NewPCG(seed, call))
		ns := make([]int64, 2000)
		var sum float64
		for i := range ns {
			// 10 ns steps, as a report's 0.1%-wide buckets keep them.
			ns[i] = 10 * int64(factor*(1000+100*r.ExpFloat64()))
			sum += float64(ns[i])
		}
		slices.Sort(ns)
		var buckets []rdma.Bucket
		for _, v := range ns {
			if k := len(buckets) - 1; k >= 0 && buckets[k].Ns == v {
				buckets[k].Count++
			} else {
				buckets = append(buckets, rdma.Bucket{Ns: v, Count: 1})
			}
		}
		q := func(p float64) float64 { return float64(ns[int(math.Ceil(p*float64(len(ns))))-1]) }
		rtt := rdma.Summary{Count: len(ns), Min: float64(ns[0]), Max: float64(ns[len(ns)-1]), Mean: sum / float64(len(ns)),
			P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999), P9999: q(0.9999)}
		half := rtt.Half()
		return &rdma.Result{Spec: spec, Latency: &rdma.LatencyStats{RTT: rtt, OneWay: &half, Buckets: buckets},
			Requester: rdma.EndpointInfo{Device: "rxe0", Port: 1}, Responder: rdma.EndpointInfo{Device: "rxe0", Port: 1}}, nil
	}
}

// bandwidthOf answers bandwidth runs of 10 Gb/s times factor, each run
// 1% off it at random, seeded as latencyOf is.
func bandwidthOf(seed uint64, factor float64) answer {
	call := uint64(0)
	return func(spec rdma.Test) (*rdma.Result, error) {
		call++
		r := rand.New(rand.NewPCG(seed, call))
		bps := 1.25e9 * factor * (1 + 0.01*r.NormFloat64())
		d := rdma.Direction{From: "rxe0", To: "rxe0", BytesPerSecond: bps, MessagesPerSec: bps / float64(max(spec.Size, 1))}
		return &rdma.Result{Spec: spec, Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{d}},
			Requester: rdma.EndpointInfo{Device: "rxe0", Port: 1}, Responder: rdma.EndpointInfo{Device: "rxe0", Port: 1}}, nil
	}
}

// byMeasure answers each run by its measure, as a device would.
func byMeasure(lat, bw answer) *fakeTarget {
	return &fakeTarget{results: []answer{func(spec rdma.Test) (*rdma.Result, error) {
		if spec.Measure == rdma.MeasureBandwidth {
			return bw(spec)
		}
		return lat(spec)
	}}}
}

// baselineScenario is a latency case and a bandwidth case that read a
// baseline; PASS and REPEAT are filled in per test.
const baselineScenario = `
name: gate
device: rxe0
baseline: base.json
REPEAT
cases:
  - name: lat
    op: write
    measure: latency
    sizes: [64]
    iterations: 2000
    pass: LATPASS
  - name: bw
    op: write
    measure: bandwidth
    sizes: [64KiB]
    pass: BWPASS
`

func parseBaselineScenario(t *testing.T, lat, bw string, repeat int, base *report.Report) *Scenario {
	t.Helper()
	doc := strings.NewReplacer("LATPASS", lat, "BWPASS", bw, "REPEAT", "repeat: "+string(rune('0'+repeat))).Replace(baselineScenario)
	sc, err := Parse("gate.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.Baseline.Report = base
	return sc
}

// plainReport is a report of the baseline scenario's cases judged by
// nothing that reads a baseline, as an earlier release would write it,
// with fixed times so that it can be a golden file.
func plainReport(t *testing.T, repeat int, target Target) *report.Report {
	t.Helper()
	doc := strings.NewReplacer("baseline: base.json\n", "", "LATPASS", "errors == 0", "BWPASS", "errors == 0",
		"REPEAT", "repeat: "+string(rune('0'+repeat))).Replace(baselineScenario)
	sc, err := Parse("gate.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Execute(context.Background(), sc, target, Options{Tool: "rdmarun test", File: "gate.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	rep.Started, rep.Finished = at, at.Add(time.Minute)
	for i := range rep.Runs {
		rep.Runs[i].Started, rep.Runs[i].Seconds = at.Add(time.Duration(i)*time.Second), 1
	}
	return rep
}

// TestJudgeBaseline: the conditions that read the baseline get
// runner/compare's verdicts and the baseline's values, and fail with a
// reason, never silently, where the comparison judged nothing.
func TestJudgeBaseline(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lat, bw   string  // the cases' pass:
		repeat    int     // of both reports
		latFactor float64 // the new report's latency against the baseline's
		bwFactor  float64
		noLatency bool // the baseline has no latency run
		statuses  []report.Status
		verdicts  []string // each run's verdicts: expr, then "ok", "FAILED" or the error
		values    map[string]float64
	}{
		{name: "not regressed", lat: "[not regressed(p99), p99 <= baseline.p99 * 1.05]", bw: "bw_gbps >= baseline.bw_gbps * 0.95",
			repeat: 1, latFactor: 1, bwFactor: 1, statuses: []report.Status{report.Passed, report.Passed},
			verdicts: []string{"not regressed(p99): ok", "p99 <= baseline.p99 * 1.05: ok", "bw_gbps >= baseline.bw_gbps * 0.95: ok"},
			values:   map[string]float64{"ratio(p99)": 1}},
		{name: "latency regressed", lat: "[errors == 0, not regressed(p99), p99 <= baseline.p99 * 1.05]", bw: "bw_gbps >= baseline.bw_gbps * 0.95",
			repeat: 1, latFactor: 1.3, bwFactor: 1, statuses: []report.Status{report.Failed, report.Passed},
			verdicts: []string{"errors == 0: ok", "not regressed(p99): FAILED", "p99 <= baseline.p99 * 1.05: FAILED", "bw_gbps >= baseline.bw_gbps * 0.95: ok"}},
		{name: "latency improved", lat: "improved(p50) && not regressed(p99)", bw: "errors == 0",
			repeat: 1, latFactor: 0.7, bwFactor: 1, statuses: []report.Status{report.Passed, report.Passed},
			verdicts: []string{"improved(p50) && not regressed(p99): ok", "errors == 0: ok"}},
		{name: "tail not judged", lat: "not regressed(p999)", bw: "errors == 0",
			repeat: 1, latFactor: 1, bwFactor: 1, statuses: []report.Status{report.Failed, report.Passed},
			verdicts: []string{`not regressed(p999): threshold "not regressed(p999)": regressed(p999): not judged against the baseline base.json: p99.9 needs 10000 samples a run (iterations), the runs have 2000 and 2000`, "errors == 0: ok"}},
		{name: "bandwidth regressed over repeats", lat: "errors == 0", bw: "[not regressed(bw_gbps), not regressed(msg_rate)]",
			repeat: 3, latFactor: 1, bwFactor: 0.8,
			statuses: slices.Repeat([]report.Status{report.Passed, report.Failed}, 3),
			verdicts: slices.Repeat([]string{"errors == 0: ok", "not regressed(bw_gbps): FAILED", "not regressed(msg_rate): FAILED"}, 3)},
		{name: "bandwidth unchanged over repeats", lat: "errors == 0", bw: "not regressed(bw_gbps) && not improved(bw_gbps)",
			repeat: 3, latFactor: 1, bwFactor: 1,
			statuses: slices.Repeat([]report.Status{report.Passed, report.Passed}, 3),
			verdicts: slices.Repeat([]string{"errors == 0: ok", "not regressed(bw_gbps) && not improved(bw_gbps): ok"}, 3)},
		// One run a side has no spread between runs: a rate is not
		// judged, and the condition fails saying so, even where another
		// branch would decide alone.
		{name: "rate not judged with one run", lat: "errors == 0", bw: "bw_gbps > 1 || not regressed(bw_gbps)",
			repeat: 1, latFactor: 1, bwFactor: 1, statuses: []report.Status{report.Passed, report.Failed},
			verdicts: []string{"errors == 0: ok", `bw_gbps > 1 || not regressed(bw_gbps): threshold "bw_gbps > 1 || not regressed(bw_gbps)": regressed(bw_gbps): not judged against the baseline base.json: a rate's interval needs 2 runs a side (repeat: 2 or more), there are 1 and 1`}},
		{name: "baseline missing a run", lat: "[errors == 0, not regressed(p99)]", bw: "bw_gbps >= baseline.bw_gbps * 0.95",
			repeat: 1, latFactor: 1, bwFactor: 1, noLatency: true, statuses: []report.Status{report.Failed, report.Passed},
			verdicts: []string{"errors == 0: ok", `not regressed(p99): threshold "not regressed(p99)": regressed(p99): not judged: the baseline base.json (scenario gate) has no run matching lat write latency 64 B qps=1 busy_poll`, "bw_gbps >= baseline.bw_gbps * 0.95: ok"}},
		{name: "baseline value of a missing run", lat: "p99 < baseline.p99", bw: "errors == 0",
			repeat: 1, latFactor: 1, bwFactor: 1, noLatency: true, statuses: []report.Status{report.Failed, report.Passed},
			verdicts: []string{`p99 < baseline.p99: threshold "p99 < baseline.p99": baseline.p99: not judged: the baseline base.json (scenario gate) has no run matching lat write latency 64 B qps=1 busy_poll`, "errors == 0: ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := plainReport(t, tc.repeat, byMeasure(latencyOf(1, 1), bandwidthOf(1, 1)))
			if tc.noLatency {
				base.Runs = slices.DeleteFunc(base.Runs, func(r report.Run) bool { return r.Case == "lat" })
			}
			sc := parseBaselineScenario(t, tc.lat, tc.bw, tc.repeat, base)
			rep, err := Execute(context.Background(), sc, byMeasure(latencyOf(1, tc.latFactor), bandwidthOf(2, tc.bwFactor)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var statuses []report.Status
			var verdicts []string
			for _, r := range rep.Runs {
				statuses = append(statuses, r.Status)
				for _, v := range r.Verdicts {
					s := v.Expr + ": ok"
					switch {
					case v.Error != "":
						s = v.Expr + ": " + v.Error
					case !v.Passed:
						s = v.Expr + ": FAILED"
					}
					verdicts = append(verdicts, s)
				}
			}
			if !slices.Equal(statuses, tc.statuses) {
				t.Errorf("statuses %v, want %v", statuses, tc.statuses)
			}
			if !slices.Equal(verdicts, tc.verdicts) {
				t.Errorf("verdicts\n%s\nwant\n%s", strings.Join(verdicts, "\n"), strings.Join(tc.verdicts, "\n"))
			}
			if rep.Summary.Failed != count(statuses, report.Failed) {
				t.Errorf("summary %+v does not count the statuses %v", rep.Summary, statuses)
			}
			for name, want := range tc.values {
				if got, ok := rep.Runs[0].Verdicts[0].Values[name]; !ok || got != want {
					t.Errorf("value %s = %v (%v), want %v; values %v", name, got, ok, want, rep.Runs[0].Verdicts[0].Values)
				}
			}
		})
	}
}

func count[T comparable](list []T, x T) int {
	n := 0
	for _, v := range list {
		if v == x {
			n++
		}
	}
	return n
}

// TestBaselineValues: baseline.NAME is the mean over the baseline's runs
// of the test, in the unit of NAME, and a report shows what a condition
// read of it and of the comparison.
func TestBaselineValues(t *testing.T) {
	base := plainReport(t, 2, byMeasure(latencyOf(1, 1), bandwidthOf(1, 1)))
	sc := parseBaselineScenario(t, "[p99 < baseline.p99 * 2, not regressed(p50)]", "bw_gib > baseline.bw_gib / 2", 2, base)
	rep, err := Execute(context.Background(), sc, byMeasure(latencyOf(1, 1), bandwidthOf(2, 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	mean := func(c string, of func(*rdma.Result) float64) float64 {
		var sum, n float64
		for _, r := range base.Runs {
			if r.Case == c {
				sum, n = sum+of(r.Result), n+1
			}
		}
		return sum / n
	}
	wantP99 := mean("lat", func(r *rdma.Result) float64 { return r.Latency.RTT.P99 / 1e3 })
	wantGiB := mean("bw", func(r *rdma.Result) float64 { return r.Bandwidth.Directions[0].GiBps() })
	lat, bw := rep.Runs[0], rep.Runs[1]
	if got := lat.Verdicts[0].Values["baseline.p99"]; math.Abs(got-wantP99) > 1e-9 || got == 0 {
		t.Errorf("baseline.p99 = %v, want %v (us)", got, wantP99)
	}
	if got := bw.Verdicts[0].Values["baseline.bw_gib"]; math.Abs(got-wantGiB) > 1e-9 || got == 0 {
		t.Errorf("baseline.bw_gib = %v, want %v", got, wantGiB)
	}
	// The comparison's values are those rdmarun compare shows.
	cmp, err := compare.Reports(base, rep, "base.json", "new.json", sc.Baseline.Options)
	if err != nil {
		t.Fatal(err)
	}
	var p50 compare.MetricChange
	for _, r := range cmp.Runs {
		if r.Key.Case == "lat" {
			p50 = r.Metrics[0]
		}
	}
	v := lat.Verdicts[1].Values
	if p50.Name != "p50" || v["ratio(p50)"] != p50.Ratio || v["ratio_low(p50)"] != p50.Low || v["ratio_high(p50)"] != p50.High || len(v) != 3 {
		t.Errorf("values %v, want the comparison's %+v", v, p50)
	}
	if lat.Verdicts[1].Passed != (p50.Verdict != compare.Regressed) {
		t.Errorf("verdict %+v, comparison %s", lat.Verdicts[1], p50.Verdict)
	}
}

// TestBaselineAfterLastRun: abort_on_fail does not stop on a condition
// that reads the baseline, which is judged only after the last run; the
// other conditions still stop it.
func TestBaselineAfterLastRun(t *testing.T) {
	base := plainReport(t, 1, byMeasure(latencyOf(1, 1), bandwidthOf(1, 1)))
	sc := parseBaselineScenario(t, "not regressed(p99)", "errors == 0", 1, base)
	for i := range sc.runs {
		sc.runs[i].AbortOnFail = true
	}
	rep, err := Execute(context.Background(), sc, byMeasure(latencyOf(1, 2), bandwidthOf(1, 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.StopReason != "" || rep.Summary.Failed != 1 || rep.Summary.Passed != 1 || ExitStatus(rep) != 1 {
		t.Errorf("stop %q, summary %+v", rep.StopReason, rep.Summary)
	}
}

// TestExecuteUnreadBaseline: a scenario from Parse whose baseline was
// never read does not run, rather than fail every condition on it.
func TestExecuteUnreadBaseline(t *testing.T) {
	sc := parseBaselineScenario(t, "not regressed(p99)", "errors == 0", 1, nil)
	_, err := Execute(context.Background(), sc, byMeasure(latencyOf(1, 1), bandwidthOf(1, 1)), Options{})
	if err == nil || !strings.Contains(err.Error(), "the baseline base.json was not read") {
		t.Errorf("error %v", err)
	}
}

// TestBaselineTestdata keeps testdata/baseline/base.json, the report the
// load tests read, what the scenario there would write (go test -update
// rewrites it).
func TestBaselineTestdata(t *testing.T) {
	rep := plainReport(t, 1, byMeasure(latencyOf(1, 1), bandwidthOf(1, 1)))
	var b bytes.Buffer
	if err := report.JSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("baseline", "base.json"), b.Bytes())
	if _, err := compare.Read(filepath.Join("testdata", "baseline", "base.json")); err != nil {
		t.Fatal(err)
	}
}

// TestLoadBaseline: Load reads the baseline's report, a relative
// baseline: from the scenario's directory and --baseline from the working
// directory, and says what is wrong with one it cannot use.
func TestLoadBaseline(t *testing.T) {
	const allowed = "; write the path of a report of an earlier run of this scenario (written with --json or --save-baseline)"
	for _, tc := range []struct {
		name, file string
		opts       LoadOptions
		baseline   string // the file read, when it loads
		err        string
	}{
		{name: "from the scenario's directory", file: "testdata/baseline/gate.yaml", baseline: "testdata/baseline/base.json"},
		{name: "from a variable", file: "testdata/baseline/gate.yaml", opts: LoadOptions{Vars: map[string]string{"base": "../baseline/base.json"}},
			baseline: "testdata/baseline/base.json"},
		{name: "flag over the file", file: "testdata/baseline/gate.yaml", opts: LoadOptions{Vars: map[string]string{"base": "nope.json"}, Baseline: "testdata/baseline/base.json"},
			baseline: "testdata/baseline/base.json"},
		// The conditions need a baseline, and the flag gives it.
		{name: "flag alone", file: "testdata/invalid-baseline-none.yaml", opts: LoadOptions{Baseline: "testdata/baseline/base.json"},
			baseline: "testdata/baseline/base.json"},
		{name: "missing", file: "testdata/baseline/gate.yaml", opts: LoadOptions{Vars: map[string]string{"base": "nope.json"}},
			err: "testdata/baseline/gate.yaml:6:11: baseline: open testdata/baseline/nope.json: no such file or directory" + allowed},
		{name: "not JSON", file: "testdata/baseline/gate.yaml", opts: LoadOptions{Vars: map[string]string{"base": "not-json.json"}},
			err: "testdata/baseline/gate.yaml:6:11: baseline: testdata/baseline/not-json.json:1:2: not JSON: invalid character 'h' in literal true (expecting 'r')" + allowed},
		{name: "another schema", file: "testdata/baseline/gate.yaml", opts: LoadOptions{Vars: map[string]string{"base": "v3.json"}},
			err: "testdata/baseline/gate.yaml:6:11: baseline: testdata/baseline/v3.json: the reports have different schema versions: it is rdmarun.report/v3, this rdmarun reads rdmarun.report/v4; rerun the scenario with this release" + allowed},
		{name: "flag missing", file: "testdata/baseline/gate.yaml", opts: LoadOptions{Baseline: "nope.json"},
			err: "testdata/baseline/gate.yaml: --baseline: open nope.json: no such file or directory" + allowed},
		{name: "flag that nothing reads", file: "testdata/valid/minimal.yaml", opts: LoadOptions{Baseline: "testdata/baseline/base.json"},
			err: "testdata/valid/minimal.yaml: --baseline: no condition reads the baseline; add one to a case's pass:, such as not regressed(p99) or bw_gbps >= baseline.bw_gbps * 0.95, or remove it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := LoadWith(tc.file, tc.opts)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error\n%v\nwant\n%s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b := sc.Baseline
			if b.File != tc.baseline || b.Report == nil || b.Report.Scenario != "gate" || len(b.Report.Runs) != 2 {
				t.Errorf("baseline %s, report %v", b.File, b.Report != nil)
			}
			if b.Options != compare.DefaultOptions() {
				t.Errorf("options %+v, want the defaults", b.Options)
			}
		})
	}
}

// TestBaselineOptions: the mapping sets the comparison's smallest effect
// and confidence, as percentages or fractions, and keeps the defaults of
// what it leaves out.
func TestBaselineOptions(t *testing.T) {
	const cases = "cases:\n  - {name: c, op: write, measure: bandwidth, pass: not regressed(bw_gbps)}\n"
	d := compare.DefaultOptions()
	for doc, want := range map[string]compare.Options{
		"baseline: b.json\n":                                             d,
		"baseline: {file: b.json, min_effect: 10%}\n":                    {MinEffect: 0.1, Confidence: d.Confidence, Resamples: d.Resamples, Seed: d.Seed},
		"baseline: {file: b.json, confidence: 0.99, min_effect: 0}\n":    {MinEffect: 0, Confidence: 0.99, Resamples: d.Resamples, Seed: d.Seed},
		"vars: {e: 2.5}\nbaseline: {file: b.json, min_effect: ${e} %}\n": {MinEffect: 0.025, Confidence: d.Confidence, Resamples: d.Resamples, Seed: d.Seed},
	} {
		sc, err := Parse("f.yaml", []byte(doc+cases), nil)
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if got := sc.Baseline.Options; got != want || sc.Baseline.File != "b.json" || sc.Baseline.Report != nil {
			t.Errorf("%s: %+v, want %+v", doc, sc.Baseline, want)
		}
		if err := sc.Baseline.Options.Validate(); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// TestBenchHasNoBaseline: rdmarun bench's conditions cannot read a
// baseline, and say so with the flag's name.
func TestBenchHasNoBaseline(t *testing.T) {
	_, err := Single("bench", []Setting{{Key: "op", As: "--op", Value: "write"}, {Key: "measure", As: "--measure", Value: "latency"},
		{Key: "pass", As: "--pass", Value: "not regressed(p99)"}})
	want := `--pass: "not regressed(p99)" compares with a baseline, and rdmarun bench has none; run the case from a scenario file with baseline: FILE`
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}

// regressedP99 is a comparison whose p99 regressed, p50 did not change,
// and p99.9 could not be judged.
func regressedP99() *compare.RunChange {
	return &compare.RunChange{Verdict: compare.Regressed, Metrics: []compare.MetricChange{
		{Name: "p50", Verdict: compare.Unchanged, Ratio: 1.01, Low: 0.98, High: 1.04},
		{Name: "p99", Verdict: compare.Regressed, Ratio: 1.3, Low: 1.2, High: 1.4},
		{Name: "p99.9", Verdict: compare.NotJudged, Ratio: 1.5, Reason: "p99.9 needs 10000 samples a run (iterations), the runs have 2000 and 2000"},
	}}
}

func withComparison(env Env, change *compare.RunChange) Env {
	m := &baselineMatch{file: "b.json", key: compare.Key{Case: "c"}, change: change, finished: true}
	env.Baseline = BaselineValues{P99: 7, BwGbps: 100}
	m.attach(&env)
	return env
}

// TestThresholdBaselineEval: what each of runner/compare's verdicts
// makes of regressed() and improved(), and the values a report shows.
func TestThresholdBaselineEval(t *testing.T) {
	notFinished := &compare.RunChange{Verdict: compare.Regressed, Reason: "1 of 1 runs did not finish in new (stalled), none in base"}
	otherDevices := &compare.RunChange{Verdict: compare.Incomparable, Reason: "devices differ: base ran on rxe0 to rxe0, new on mlx5_0 to mlx5_0"}
	for _, tc := range []struct {
		src    string
		change *compare.RunChange
		want   bool
		err    string
		values map[string]float64
	}{
		{src: "not regressed(p99)", change: regressedP99(), want: false,
			values: map[string]float64{"ratio(p99)": 1.3, "ratio_low(p99)": 1.2, "ratio_high(p99)": 1.4}},
		{src: `regressed("p99") && not improved(p99)`, change: regressedP99(), want: true},
		{src: "not regressed(p50) && not improved(p50)", change: regressedP99(), want: true},
		{src: "p99 > baseline.p99 && bw_gbps < baseline.bw_gbps", change: regressedP99(), want: true,
			values: map[string]float64{"p99": 8, "baseline.p99": 7, "bw_gbps": 92.5, "baseline.bw_gbps": 100}},
		{src: "not regressed(p999)", change: regressedP99(),
			err:    `threshold "not regressed(p999)": regressed(p999): not judged against the baseline b.json: p99.9 needs 10000 samples a run (iterations), the runs have 2000 and 2000`,
			values: map[string]float64{"ratio(p999)": 1.5}},
		{src: "not regressed(bw_gbps)", change: regressedP99(),
			err: `threshold "not regressed(bw_gbps)": regressed(bw_gbps): not judged against the baseline b.json: the comparison has no bw_gbps`},
		// Runs that finished in the baseline and not here: regressed.
		{src: "not regressed(p99)", change: notFinished, want: false},
		{src: "improved(p99)", change: notFinished, want: false},
		{src: "not regressed(p99)", change: otherDevices,
			err: `threshold "not regressed(p99)": regressed(p99): not judged against the baseline b.json: devices differ: base ran on rxe0 to rxe0, new on mlx5_0 to mlx5_0`},
	} {
		th := MustCompileThreshold(tc.src)
		env := withComparison(sample(), tc.change)
		got, err := th.Eval(env)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error\n%v\nwant\n%s", tc.src, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("%s = %v, %v; want %v", tc.src, got, err, tc.want)
		}
		if v := th.Values(env); tc.values != nil && !maps.Equal(v, tc.values) {
			t.Errorf("%s: values %v, want %v", tc.src, v, tc.values)
		}
	}
	// Without a baseline, every way of reading one fails.
	for _, src := range []string{"not regressed(p99)", "improved(bw_gbps)", "p99 < baseline.p99"} {
		_, err := MustCompileThreshold(src).Eval(sample())
		if err == nil || !strings.Contains(err.Error(), "no baseline to compare with; give the scenario baseline: FILE, or run it with --baseline FILE") {
			t.Errorf("%s without a baseline: %v", src, err)
		}
	}
}
