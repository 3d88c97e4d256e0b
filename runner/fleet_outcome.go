package runner

import (
	"fmt"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
	"github.com/rdmarun/rdmarun/units"
)

// metricName is what a run's outcomes are called: latency runs give
// "<base> RTT p50" and "<base> RTT p99" (seconds), bandwidth runs
// "<base> bandwidth" (bytes/s, higher is better).
type metricName struct {
	base    string
	measure rdma.Measure
}

// metricNames names each run's metrics "<case> <size>", adding the QP
// count and the mode only when the case sweeps them: the fleet medians
// are taken per name, and two runs of one pair under one name would be
// read as a run and its confirmation.
func metricNames(runs []Run) []metricName {
	qps := map[string]map[int]bool{}
	modes := map[string]map[rdma.Mode]bool{}
	for _, r := range runs {
		if qps[r.Case] == nil {
			qps[r.Case], modes[r.Case] = map[int]bool{}, map[rdma.Mode]bool{}
		}
		qps[r.Case][r.Spec.QPs] = true
		modes[r.Case][r.Spec.Mode] = true
	}
	out := make([]metricName, len(runs))
	for i, r := range runs {
		base := r.Case + " " + units.FormatBytes(uint64(r.Spec.Size))
		if len(qps[r.Case]) > 1 {
			base += fmt.Sprintf(" qps=%d", r.Spec.QPs)
		}
		if len(modes[r.Case]) > 1 {
			base += " " + r.Spec.Mode.String()
		}
		out[i] = metricName{base: base, measure: r.Spec.Measure}
	}
	return out
}

// fleetOutcomes are a run's outcomes, one per metric its measure gives.
// A run that failed a threshold or errored still gives them, not OK, so
// the pair shows as bad in each of its metrics' matrices.
func fleetOutcomes(p fleet.Pair, name metricName, res pairResult) []fleet.Outcome {
	ok := res.run.Status == report.Passed
	result := res.run.Result
	setup := res.setupHost >= 0
	if name.measure == rdma.MeasureBandwidth {
		o := fleet.Outcome{Pair: p, Metric: name.base + " bandwidth", OK: ok, Env: res.env, Setup: setup, HigherIsBetter: true}
		if result != nil && result.Bandwidth != nil {
			for _, d := range result.Bandwidth.Directions {
				o.Value += d.BytesPerSecond
			}
		}
		return []fleet.Outcome{o}
	}
	p50 := fleet.Outcome{Pair: p, Metric: name.base + " RTT p50", OK: ok, Env: res.env, Setup: setup}
	p99 := fleet.Outcome{Pair: p, Metric: name.base + " RTT p99", OK: ok, Env: res.env, Setup: setup}
	if result != nil && result.Latency != nil {
		p50.Value, p99.Value = result.Latency.RTT.P50/1e9, result.Latency.RTT.P99/1e9
	}
	return []fleet.Outcome{p50, p99}
}

// fleetExitStatus is ExitStatus for a fleet run. Interrupted is 5, as
// for one pair. An unreachable host does not make the run unusable, only
// its pairs: 4 is kept for a fleet where no pair could run at all. Any
// other bad news is 1: a run failed a threshold or did not finish, or a
// suspect is named (a lagging pair fails no threshold but still blames).
// A pair whose confirmation passed is not a suspect, but its failed run
// still counts: the threshold did fail once.
func fleetExitStatus(rep *report.Report) int {
	switch {
	case rep.StopReason == report.StopInterrupted:
		return 5
	case rep.StopReason == report.StopEnvironment:
		return 4
	case rep.Summary.Failed+rep.Summary.Errors > 0 || len(rep.Fleet.Suspects) > 0:
		return 1
	}
	return 0
}
