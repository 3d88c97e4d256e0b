package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// streaming returns Options that write a runs file to b, as --runs does.
func streaming(t *testing.T, b *bytes.Buffer) Options {
	t.Helper()
	var w *report.RunsWriter
	return Options{
		Begun: func(rep *report.Report) {
			var err error
			if w, err = report.NewRunsWriter(b, rep); err != nil {
				t.Fatal(err)
			}
		},
		Progress: func(_, _ int, run *report.Run) {
			if run.Status == "" {
				return
			}
			if err := w.Write(run); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// readBack reads a runs file the test wrote.
func readBack(t *testing.T, b *bytes.Buffer) []report.Run {
	t.Helper()
	_, runs, err := report.ReadRuns(b)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// sameRuns compares two reports' runs on what the fakes decide (status,
// error, result, verdicts, pair), not on the clock.
func sameRuns(t *testing.T, a, b *report.Report) {
	t.Helper()
	shape := func(rep *report.Report) []string {
		var out []string
		for _, r := range rep.Runs {
			ran := !r.Started.IsZero() // when does not matter, whether it ran does
			r.Started, r.Seconds = time.Time{}, 0
			j, _ := json.Marshal(r)
			out = append(out, fmt.Sprintf("ran %v %s", ran, j))
		}
		return out
	}
	ga, gb := shape(a), shape(b)
	if len(ga) != len(gb) {
		t.Fatalf("%d runs uninterrupted, %d resumed", len(ga), len(gb))
	}
	for i := range ga {
		if ga[i] != gb[i] {
			t.Errorf("run %d differs:\nuninterrupted %s\nresumed       %s", i, ga[i], gb[i])
		}
	}
	if a.Summary != b.Summary || a.StopReason != b.StopReason || a.Stopped != b.Stopped {
		t.Errorf("summary %+v stop %q (%s), resumed %+v stop %q (%s)", a.Summary, a.Stopped, a.StopReason, b.Summary, b.Stopped, b.StopReason)
	}
}

// cancelling is a target that ends ctx at its call number at (from 1),
// as Ctrl-C does, and answers that call as an interrupted test.
type cancelling struct {
	*fakeTarget
	at     int
	cancel context.CancelFunc
}

func (c *cancelling) Run(ctx context.Context, spec rdma.Test) (*rdma.Result, error) {
	if c.calls+1 == c.at {
		c.calls++
		c.cancel()
		return nil, ctx.Err()
	}
	return c.fakeTarget.Run(ctx, spec)
}

// bySize answers the gate's 64-byte run slow (failing p99 < 10us) and the
// others fast, whichever call asks.
func bySize(spec rdma.Test) (*rdma.Result, error) {
	if spec.Size == 64 {
		return latencyResult(50)(spec)
	}
	return latencyResult(5)(spec)
}

// TestExecuteResume: a single pair interrupted after some runs, then
// resumed from its runs file, makes the report an uninterrupted run
// makes, and the resumed run asks the target only for the runs missing.
func TestExecuteResume(t *testing.T) {
	for _, tc := range []struct {
		name  string
		abort bool
		at    int // the call that is interrupted
		calls int // the resumed run's calls
	}{
		{name: "after the first run", at: 2, calls: 2},
		{name: "after two runs", at: 3, calls: 1},
		{name: "at the first run", at: 1, calls: 3},
		// The failed run 1 stopped the first run: resuming runs nothing.
		{name: "abort on fail", abort: true, at: 3, calls: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := Execute(context.Background(), load(t, tc.abort), &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var b bytes.Buffer
			cut := &cancelling{fakeTarget: &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize}}, at: tc.at, cancel: cancel}
			if _, err := Execute(ctx, load(t, tc.abort), cut, streaming(t, &b)); err != nil {
				t.Fatal(err)
			}
			opt := Options{Resume: readBack(t, &b)}
			ft := &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize}}
			resumed, err := Execute(context.Background(), load(t, tc.abort), ft, opt)
			if err != nil {
				t.Fatal(err)
			}
			sameRuns(t, whole, resumed)
			if ft.calls != tc.calls {
				t.Errorf("the resumed run asked for %d runs, want %d", ft.calls, tc.calls)
			}
		})
	}
}

// TestExecuteResumeErrored: an errored run is run again on resume (the
// operator fixed the host); the passed one before it is kept.
func TestExecuteResumeErrored(t *testing.T) {
	var b bytes.Buffer
	unreachable := failWith(errors.New("rdma: the test failed midway"))
	ft := &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize, unreachable, bySize}}
	if _, err := Execute(context.Background(), load(t, false), ft, streaming(t, &b)); err != nil {
		t.Fatal(err)
	}
	again := &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize}}
	rep, err := Execute(context.Background(), load(t, false), again, Options{Resume: readBack(t, &b)})
	if err != nil {
		t.Fatal(err)
	}
	if again.calls != 1 {
		t.Errorf("%d runs asked for, want 1: the errored run alone", again.calls)
	}
	want := []report.Status{report.Passed, report.Failed, report.Passed}
	for i, r := range rep.Runs {
		if r.Status != want[i] {
			t.Errorf("run %d: %s %q, want %s", i, r.Status, r.Error, want[i])
		}
	}
}

// TestExecuteFleetResume: a fleet interrupted in its third pair, then
// resumed from its runs file, makes the uninterrupted run's report
// (runs, matrices, suspects, confirmation) and asks the relay only for
// the runs of the pairs not done.
func TestExecuteFleetResume(t *testing.T) {
	edit := func(fl *Fleet) { fl.Parallel, fl.Confirm = 1, 1 }
	// Host 2 is slow: its pairs fail p99 < 100us, are confirmed and
	// name it the suspect.
	slow := func(ctx context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		if c.A == 2 || c.B == 2 {
			return measuredAs(spec, 200, 8), nil
		}
		return measuredAs(spec, 10, 8), nil
	}
	sc := fleetScenario(t, 4, edit)
	full := &fakeRelay{hosts: sc.Fleet.Hosts, answer: slow}
	whole, err := ExecuteFleet(context.Background(), sc, Relay{Via: full, Doctor: full.Doctor}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Fleet.Suspects) == 0 {
		t.Fatal("the uninterrupted fleet names no suspect: the test would prove nothing of them")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc = fleetScenario(t, 4, edit)
	calls := 0
	cut := &fakeRelay{hosts: sc.Fleet.Hosts, answer: func(ctx context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		// Each pair runs 2 tests; the 5th is the third pair's first.
		if calls++; calls == 5 {
			cancel()
			return nil, ctx.Err()
		}
		return slow(ctx, c, spec)
	}}
	var b bytes.Buffer
	if _, err := ExecuteFleet(ctx, sc, Relay{Via: cut, Doctor: cut.Doctor}, streaming(t, &b)); err != nil {
		t.Fatal(err)
	}
	done := readBack(t, &b)
	finished := 0
	for _, r := range done {
		if r.Status != report.Skipped {
			finished++
		}
	}
	if finished != 4 {
		t.Fatalf("the interrupted fleet's file holds %d finished runs, want the first two pairs' 4", finished)
	}

	sc = fleetScenario(t, 4, edit)
	again := &fakeRelay{hosts: sc.Fleet.Hosts, answer: slow}
	resumed, err := ExecuteFleet(context.Background(), sc, Relay{Via: again, Doctor: again.Doctor}, Options{Resume: done})
	if err != nil {
		t.Fatal(err)
	}
	sameRuns(t, whole, resumed)
	for _, x := range []struct {
		what string
		a, b any
	}{{"matrices", whole.Fleet.Matrices, resumed.Fleet.Matrices}, {"suspects", whole.Fleet.Suspects, resumed.Fleet.Suspects}} {
		ja, _ := json.Marshal(x.a)
		jb, _ := json.Marshal(x.b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s differ:\nuninterrupted %s\nresumed       %s", x.what, ja, jb)
		}
	}
	if len(resumed.Fleet.Rounds) != len(whole.Fleet.Rounds) {
		t.Errorf("%d rounds resumed, %d uninterrupted", len(resumed.Fleet.Rounds), len(whole.Fleet.Rounds))
	}
	if got, want := len(again.calls), len(full.calls)-4; got != want {
		t.Errorf("the resumed fleet asked for %d tests, want %d (%d less the 4 done)", got, want, len(full.calls))
	}
	for _, r := range done {
		if r.Status == report.Skipped {
			continue // the pair interrupted, run again whole
		}
		k := [2]int{r.Pair.Pair.A.Host, r.Pair.Pair.B.Host}
		// A done pair's first attempt is not asked again; a confirmation
		// of it is.
		if again.perPair[k] != full.perPair[k]-2 {
			t.Errorf("pair %v: asked %d times resumed, %d uninterrupted: its first attempt was done", k, again.perPair[k], full.perPair[k])
		}
	}
}

// TestResumeMismatch: a runs file of another scenario, or of this one
// edited, is refused with an error naming the first run that differs.
func TestResumeMismatch(t *testing.T) {
	var b bytes.Buffer
	if _, err := Execute(context.Background(), load(t, false), &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize}}, streaming(t, &b)); err != nil {
		t.Fatal(err)
	}
	gateRuns := readBack(t, &b)
	fleetSc := fleetScenario(t, 3, nil)
	f := &fakeRelay{hosts: fleetSc.Fleet.Hosts}
	fleetRep, err := ExecuteFleet(context.Background(), fleetSc, Relay{Via: f, Doctor: f.Doctor}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(rs []report.Run, i int, fn func(*report.Run)) []report.Run {
		out := append([]report.Run(nil), rs...)
		fn(&out[i])
		return out
	}
	for _, tc := range []struct {
		name   string
		fleet  bool
		resume []report.Run
		want   []string
	}{
		{name: "another case", resume: edit(gateRuns, 1, func(r *report.Run) { r.Case = "bw" }),
			want: []string{"run 2 of the file (case bw, index 1)", "is of case lat", "another scenario"}},
		{name: "another size", resume: edit(gateRuns, 2, func(r *report.Run) { r.Spec.Size = 8 }),
			want: []string{"run 3 of the file", "size 8", "size 4096", "edited since"}},
		{name: "index beyond", resume: edit(gateRuns, 0, func(r *report.Run) { r.Index = 7 }),
			want: []string{"run 1 of the file (case lat, index 7)", "has 3 runs"}},
		// The fleet's first run is lat at 64 bytes, the gate's run 1.
		{name: "a fleet's runs", resume: fleetRep.Runs[:1], want: []string{"a fleet's run (pair h", "runs one pair"}},
		{name: "a single pair's runs in a fleet", fleet: true, resume: edit(fleetRep.Runs, 0, func(r *report.Run) { r.Pair = nil }),
			want: []string{"run 1 of the file", "a single pair's run, and the scenario is a fleet"}},
		{name: "a host of another fleet", fleet: true, resume: edit(fleetRep.Runs, 0, func(r *report.Run) { p := *r.Pair; p.A = "db7"; r.Pair = &p }),
			want: []string{"run 1 of the file", "as db7, not a host of this fleet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.fleet {
				sc := fleetScenario(t, 3, nil)
				f := &fakeRelay{hosts: sc.Fleet.Hosts}
				_, err = ExecuteFleet(context.Background(), sc, Relay{Via: f, Doctor: f.Doctor}, Options{Resume: tc.resume})
				if len(f.calls) != 0 {
					t.Errorf("%d tests asked for before the mismatch was found", len(f.calls))
				}
			} else {
				ft := &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize}}
				_, err = Execute(context.Background(), load(t, false), ft, Options{Resume: tc.resume})
				if ft.calls != 0 {
					t.Errorf("%d runs asked for before the mismatch was found", ft.calls)
				}
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
