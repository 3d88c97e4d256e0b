package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// fakeTarget answers runs from a script: a result per call, or an error.
// The verbs core is tested on real devices; this tests the judging.
type fakeTarget struct {
	results []func(rdma.Test) (*rdma.Result, error)
	calls   int
}

func (f *fakeTarget) Run(_ context.Context, spec rdma.Test) (*rdma.Result, error) {
	fn := f.results[f.calls%len(f.results)]
	f.calls++
	return fn(spec)
}
func (f *fakeTarget) LinkGbps() float64 { return 100 }
func (f *fakeTarget) Describe() string  { return "fake" }
func (f *fakeTarget) Close() error      { return nil }

func latencyResult(p99us float64) func(rdma.Test) (*rdma.Result, error) {
	return func(spec rdma.Test) (*rdma.Result, error) {
		s := rdma.Summary{Count: 10, Min: 1000, Max: p99us * 1000, Mean: 2000, P50: 1500, P90: 2000, P99: p99us * 1000, P999: p99us * 1000, P9999: p99us * 1000}
		return &rdma.Result{Spec: spec, Latency: &rdma.LatencyStats{RTT: s}}, nil
	}
}

func failWith(err error) func(rdma.Test) (*rdma.Result, error) {
	return func(rdma.Test) (*rdma.Result, error) { return nil, err }
}

const gate = `
name: gate
device: rxe0
cases:
  - name: lat
    op: write
    measure: latency
    sizes: [2, 64, 4096]
    pass: p99 < 10us
    ABORT
`

func load(t *testing.T, abort bool) *Scenario {
	t.Helper()
	text := gate
	if abort {
		text = strings.Replace(text, "ABORT", "abort_on_fail: true", 1)
	} else {
		text = strings.Replace(text, "ABORT", "", 1)
	}
	sc, err := Parse("gate.yaml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestExecute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		abort    bool
		results  []func(rdma.Test) (*rdma.Result, error)
		statuses []report.Status
		exit     int
		stopped  string
		reason   report.StopReason
	}{
		{name: "all pass", results: []func(rdma.Test) (*rdma.Result, error){latencyResult(5)},
			statuses: []report.Status{report.Passed, report.Passed, report.Passed}, exit: 0},
		{name: "one fails", results: []func(rdma.Test) (*rdma.Result, error){latencyResult(5), latencyResult(50), latencyResult(5)},
			statuses: []report.Status{report.Passed, report.Failed, report.Passed}, exit: 1},
		{name: "abort on fail", abort: true, results: []func(rdma.Test) (*rdma.Result, error){latencyResult(5), latencyResult(50)},
			statuses: []report.Status{report.Passed, report.Failed, report.Skipped}, exit: 1, stopped: "case lat has abort_on_fail and run 1 failed", reason: report.StopAbortOnFail},
		{name: "a run errors", results: []func(rdma.Test) (*rdma.Result, error){latencyResult(5), failWith(&rdma.StallError{Device: "rxe0"}), latencyResult(50)},
			statuses: []report.Status{report.Passed, report.Errored, report.Failed}, exit: 5},
		{name: "peer unreachable", results: []func(rdma.Test) (*rdma.Result, error){failWith(&peer.Error{Addr: "h:1", Stage: peer.StageConnecting, Err: errors.New("refused")})},
			statuses: []report.Status{report.Errored, report.Skipped, report.Skipped}, exit: 4, stopped: "environment unusable: responder h:1, connecting: refused", reason: report.StopEnvironment},
		{name: "memlock", results: []func(rdma.Test) (*rdma.Result, error){failWith(fmt.Errorf("x: %w", &rdma.VerbsError{Op: "ibv_reg_mr", Errno: syscall.ENOMEM}))},
			statuses: []report.Status{report.Errored, report.Skipped, report.Skipped}, exit: 4, reason: report.StopEnvironment},
		// The responder's own memlock, as it reports it (ctrl.SendSetup).
		{name: "responder memlock", results: []func(rdma.Test) (*rdma.Result, error){failWith(&peer.Error{Addr: "h:1", Stage: peer.StageConnecting,
			Err: &ctrl.RemoteError{Peer: "h:1", Code: "setup", Msg: "ibv_reg_mr on rxe0: cannot allocate memory (errno 12)"}})},
			statuses: []report.Status{report.Errored, report.Skipped, report.Skipped}, exit: 4, reason: report.StopEnvironment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Execute(context.Background(), load(t, tc.abort), &fakeTarget{results: tc.results}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []report.Status
			for _, r := range rep.Runs {
				got = append(got, r.Status)
				if ran := r.Status != report.Skipped; ran == r.Started.IsZero() {
					t.Errorf("run %d, %s, started %v: a run that ran has its start, one skipped none", r.Index, r.Status, r.Started)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.statuses) {
				t.Errorf("statuses %v, want %v", got, tc.statuses)
			}
			if e := ExitStatus(rep); e != tc.exit {
				t.Errorf("exit %d, want %d", e, tc.exit)
			}
			if tc.stopped != "" && rep.Stopped != tc.stopped {
				t.Errorf("stopped %q, want %q", rep.Stopped, tc.stopped)
			}
			if rep.StopReason != tc.reason {
				t.Errorf("stop reason %q, want %q", rep.StopReason, tc.reason)
			}
		})
	}
}

// TestExecuteVerdictValues: a failed threshold is reported with the
// values it saw, in its own units.
func TestExecuteVerdictValues(t *testing.T) {
	rep, err := Execute(context.Background(), load(t, false), &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){latencyResult(50)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Runs[0].Verdicts[0]
	if v.Passed || v.Expr != "p99 < 10us" || v.Values["p99"] != 50 {
		t.Errorf("verdict %+v", v)
	}
}

// TestExecuteInterrupted: a cancelled context stops the scenario, marks
// the rest skipped and exits 5.
func TestExecuteInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	target := &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){
		func(spec rdma.Test) (*rdma.Result, error) { cancel(); return nil, context.Canceled },
	}}
	rep, err := Execute(ctx, load(t, false), target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Skipped != 3 || ExitStatus(rep) != 5 || rep.Stopped == "" || rep.StopReason != report.StopInterrupted {
		t.Errorf("summary %+v, stopped %q, exit %d", rep.Summary, rep.Stopped, ExitStatus(rep))
	}
}

// TestExecuteVerdictCounterValues: a threshold that reads a counter
// reports the counter's value beside the names it read, as
// Threshold.Values does: the evidence of a verdict is never dropped.
func TestExecuteVerdictCounterValues(t *testing.T) {
	sc, err := Parse("c.yaml", []byte(`
name: c
device: rxe0
cases:
  - name: lat
    op: write
    measure: latency
    pass: counter("rnr_nak_retry_err") < 5 && errors == 0
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	withCounter := func(spec rdma.Test) (*rdma.Result, error) {
		r, _ := latencyResult(5)(spec)
		side := rdma.SideSummary{Device: "rxe0"}
		side.Counters.Counters = map[string]uint64{"rnr_nak_retry_err": 7}
		r.Sides = []rdma.SideSummary{side}
		return r, nil
	}
	rep, err := Execute(context.Background(), sc, &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){withCounter}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Runs[0].Verdicts[0]
	want := map[string]float64{`counter("rnr_nak_retry_err")`: 7, "errors": 0}
	if v.Passed || fmt.Sprint(v.Values) != fmt.Sprint(want) {
		t.Errorf("verdict passed %v, values %v; want failed with %v", v.Passed, v.Values, want)
	}
}
