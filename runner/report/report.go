// Package report holds the result of a scenario run and writes it for
// people (text, HTML) and for machines (JSON, JUnit XML). Every writer is
// a func(io.Writer, *Report) error.
package report

import (
	"fmt"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// Schema names the JSON layout; it changes only with a new version.
// v2 added stop_reason; v3 added fleet (the hosts, rounds, matrices and
// suspects of a run across hosts) and each run's started and pair; v4
// added doctor (both ends' findings when a threshold failed) and, in
// each side's counters, ethtool and categories: no release had v4 yet,
// so the counters joined it rather than making a v5.
const Schema = "rdmarun.report/v4"

// Status is a run's outcome.
type Status string

// The outcomes.
const (
	Passed  Status = "passed"  // ran, and every threshold held
	Failed  Status = "failed"  // ran, and a threshold did not hold
	Errored Status = "error"   // did not finish: completion error, stall, lost peer
	Skipped Status = "skipped" // not run: the scenario stopped before it
)

// Report is one scenario's run.
type Report struct {
	Schema   string    `json:"schema"`
	Tool     string    `json:"tool"`
	Scenario string    `json:"scenario"`
	File     string    `json:"file,omitempty"`
	Peer     string    `json:"peer"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Stopped says, for people, why the scenario ended before its last
	// run; StopReason says it for programs (the exit code comes from it).
	// Both are empty when it ran to the end.
	Stopped    string     `json:"stopped,omitempty"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	Runs       []Run      `json:"runs"`
	Summary    Summary    `json:"summary"`
	// Fleet is set for a scenario run across hosts: (see Fleet).
	Fleet *Fleet `json:"fleet,omitempty"`
	// Doctor is set when a threshold failed: the doctor's findings on
	// each end (this host first), which may say why. A fleet run sets it
	// when it names suspects: the findings on the suspects' hosts, worst
	// suspect first, named as the fleet lists them.
	Doctor []DoctorEnd `json:"doctor,omitempty"`
}

// StopReason is why a scenario ended before its last run.
type StopReason string

// The reasons. Each decides an exit code, so a new one needs a new line
// in runner.ExitStatus and in schema.json.
const (
	StopAbortOnFail StopReason = "abort_on_fail" // a failing case has abort_on_fail
	StopInterrupted StopReason = "interrupted"   // Ctrl-C, or the context ended
	StopEnvironment StopReason = "environment"   // no device, memlock, responder unreachable
)

// Run is one expanded run: one case at one size, QP count and mode.
type Run struct {
	Case  string `json:"case"`
	Index int    `json:"index"` // position in the scenario's expansion
	// Repeat is the pass of a scenario with repeat: (from 1), 0 otherwise.
	Repeat   int          `json:"repeat,omitempty"`
	Status   Status       `json:"status"`
	Error    string       `json:"error,omitempty"`
	Spec     rdma.Test    `json:"spec"`
	Result   *rdma.Result `json:"result,omitempty"`
	Verdicts []Verdict    `json:"verdicts,omitempty"`
	Seconds  float64      `json:"seconds"` // wall time of the run, setup included
	// Started is when the run began (zero for a run that was skipped).
	Started time.Time `json:"started,omitzero"`
	// Pair is set in a fleet run: which pair ran it, in which round.
	Pair *PairRun `json:"pair,omitempty"`
}

// Verdict is one threshold judged on one run.
type Verdict struct {
	Expr   string             `json:"expr"`
	Passed bool               `json:"passed"`
	Values map[string]float64 `json:"values,omitempty"` // the names the expression used
	Error  string             `json:"error,omitempty"`
}

// Summary counts runs by status.
type Summary struct {
	Runs    int `json:"runs"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errors  int `json:"errors"`
	Skipped int `json:"skipped"`
}

// Tally recomputes the summary from the runs.
func (r *Report) Tally() {
	s := Summary{Runs: len(r.Runs)}
	for _, run := range r.Runs {
		switch run.Status {
		case Passed:
			s.Passed++
		case Failed:
			s.Failed++
		case Errored:
			s.Errors++
		case Skipped:
			s.Skipped++
		}
	}
	r.Summary = s
}

// Label names a run within its case: size, QP count, mode, measure.
func (r Run) Label() string {
	l := fmt.Sprintf("%s %s qps=%d %s", units.FormatBytes(uint64(r.Spec.Size)), r.Spec.Measure, r.Spec.QPs, r.Spec.Mode)
	if r.Repeat > 0 {
		l += fmt.Sprintf(" repeat %d", r.Repeat)
	}
	return l
}

// Cases returns the case names in first-seen order with their runs.
func (r *Report) Cases() []CaseRuns {
	var out []CaseRuns
	idx := map[string]int{}
	for _, run := range r.Runs {
		i, ok := idx[run.Case]
		if !ok {
			i = len(out)
			idx[run.Case] = i
			out = append(out, CaseRuns{Name: run.Case})
		}
		out[i].Runs = append(out[i].Runs, run)
	}
	return out
}

// CaseRuns is one case and its runs.
type CaseRuns struct {
	Name string
	Runs []Run
}
