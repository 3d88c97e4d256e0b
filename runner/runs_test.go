package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// TestExecuteRunsFile: the hooks --runs uses write a header and a line
// per run that ran, as each ends, and the file reads back as the
// report's runs; a skipped run never ran and has no line.
func TestExecuteRunsFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		abort   bool
		results []func(rdma.Test) (*rdma.Result, error)
		lines   int // the header and a line per run that ran
	}{
		{name: "every run", results: []func(rdma.Test) (*rdma.Result, error){latencyResult(5), latencyResult(50), latencyResult(5)}, lines: 4},
		{name: "abort on fail", abort: true, results: []func(rdma.Test) (*rdma.Result, error){latencyResult(5), latencyResult(50)}, lines: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			var w *report.RunsWriter
			written := 0 // lines written, checked at every after-call
			opt := Options{
				Begun: func(rep *report.Report) {
					var err error
					if w, err = report.NewRunsWriter(&b, rep); err != nil {
						t.Fatal(err)
					}
				},
				Progress: func(done, total int, run *report.Run) {
					if run.Status == "" {
						return
					}
					if err := w.Write(run); err != nil {
						t.Fatal(err)
					}
					written++
					if n := strings.Count(b.String(), "\n"); n != written+1 {
						t.Errorf("after run %d: %d lines, want %d", done, n, written+1)
					}
				},
			}
			rep, err := Execute(context.Background(), load(t, tc.abort), &fakeTarget{results: tc.results}, opt)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(b.String(), "\n"); n != tc.lines {
				t.Fatalf("%d lines, want %d:\n%s", n, tc.lines, b.String())
			}
			h, runs, err := report.ReadRuns(&b)
			if err != nil {
				t.Fatal(err)
			}
			if h.Scenario != rep.Scenario || !h.Started.Equal(rep.Started) {
				t.Errorf("header %+v, report %s started %v", h, rep.Scenario, rep.Started)
			}
			var ran []report.Run
			for _, r := range rep.Runs {
				if r.Status != report.Skipped {
					ran = append(ran, r)
				}
			}
			got, _ := json.Marshal(runs)
			want, _ := json.Marshal(ran)
			if !bytes.Equal(got, want) {
				t.Errorf("the runs file's runs differ from the report's:\ngot  %s\nwant %s", got, want)
			}
		})
	}
}

// TestExecuteFleetRunsFile: in a fleet, whose pairs run at once, each
// run is written once, whole, as it ends: the file holds the report's
// runs, in the order they finished rather than the report's.
func TestExecuteFleetRunsFile(t *testing.T) {
	sc := fleetScenario(t, 4, nil)
	f := &fakeRelay{hosts: sc.Fleet.Hosts}
	var b bytes.Buffer
	var w *report.RunsWriter
	opt := Options{
		Begun: func(rep *report.Report) {
			var err error
			if w, err = report.NewRunsWriter(&b, rep); err != nil {
				t.Fatal(err)
			}
		},
		Progress: func(_, _ int, run *report.Run) {
			if run.Status == "" {
				t.Error("a fleet's progress call before a run")
				return
			}
			if err := w.Write(run); err != nil {
				t.Fatal(err)
			}
		},
	}
	rep, err := ExecuteFleet(context.Background(), sc, Relay{Via: f, Doctor: f.Doctor}, opt)
	if err != nil {
		t.Fatal(err)
	}
	_, runs, err := report.ReadRuns(&b)
	if err != nil {
		t.Fatal(err)
	}
	lines := func(rs []report.Run) []string {
		var out []string
		for _, r := range rs {
			j, _ := json.Marshal(r)
			out = append(out, string(j))
		}
		slices.Sort(out)
		return out
	}
	if len(rep.Runs) == 0 {
		t.Fatal("the fleet ran nothing")
	}
	if got, want := lines(runs), lines(rep.Runs); !slices.Equal(got, want) {
		t.Errorf("the runs file holds %d runs, the report %d; they differ:\nfile   %v\nreport %v", len(got), len(want), got, want)
	}
}
