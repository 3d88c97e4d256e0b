package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/compare"
	"github.com/rdmarun/rdmarun/runner/report"
)

// recorded is the report package's fixture as its JSON writer recorded
// it (go test -update there rewrites it): its sides are soft-RoCE over
// veth, as in make demo, one with a count that moved and one without.
const recorded = "../../runner/report/testdata/report.json"

// replayTarget answers each run with the recorded result of the same
// measure, the sides of the recorded first run attached: every run then
// has a requester whose seq_errors moved and a responder all at zero.
type replayTarget struct {
	results map[rdma.Measure][]byte // JSON, so that every run gets its own copy
	sides   []rdma.SideSummary
}

func newReplayTarget(t *testing.T) *replayTarget {
	t.Helper()
	rep, err := compare.Read(recorded)
	if err != nil {
		t.Fatal(err)
	}
	rt := &replayTarget{results: map[rdma.Measure][]byte{}}
	for _, run := range rep.Runs {
		if run.Result == nil {
			continue
		}
		if rt.sides == nil && len(run.Result.Sides) == 2 {
			rt.sides = run.Result.Sides
		}
		if _, ok := rt.results[run.Spec.Measure]; !ok {
			b, err := json.Marshal(run.Result)
			if err != nil {
				t.Fatal(err)
			}
			rt.results[run.Spec.Measure] = b
		}
	}
	if rt.sides == nil || rt.results[rdma.MeasureLatency] == nil || rt.results[rdma.MeasureBandwidth] == nil {
		t.Fatalf("%s: no run with two sides, or no latency or bandwidth result", recorded)
	}
	return rt
}

func (rt *replayTarget) Run(_ context.Context, spec rdma.Test) (*rdma.Result, error) {
	var res rdma.Result
	if err := json.Unmarshal(rt.results[spec.Measure], &res); err != nil {
		return nil, err
	}
	res.Spec, res.Sides = spec, rt.sides
	return &res, nil
}
func (rt *replayTarget) LinkGbps() float64 { return 10 }
func (rt *replayTarget) Describe() string  { return "replay of " + recorded }
func (rt *replayTarget) Close() error      { return nil }

// piped runs the command with its stdout and stderr on one pipe, as
// `make demo 2>&1 | tee demo.log` has them, and returns what went
// through the pipe and the report the command wrote with --json.
func piped(t *testing.T, args ...string) (string, *report.Report) {
	t.Helper()
	rt := newReplayTarget(t)
	old := openTarget
	openTarget = func(*where, *runner.Scenario) (runner.Target, error) { return rt, nil }
	t.Cleanup(func() { openTarget = old })
	// Only the pipe may keep the progress line from rewriting itself.
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("CI", "")
	jsonFile := filepath.Join(t.TempDir(), "out.json")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	code := run(append(args, "--json", jsonFile), w, w)
	w.Close()
	out := string(<-got)
	r.Close()
	if code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	rep, err := compare.Read(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	return out, rep
}

// zeroCount matches a category shown at zero in a counters line.
var zeroCount = regexp.MustCompile(`\b(` + strings.Join(portstats.CategoryNames, "|") + `) 0\b`)

func counterLines(out string) []string {
	var lines []string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, ": counters ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// sidedRuns counts the runs whose result holds sides: a counters line
// each per side with --verbose.
func sidedRuns(rep *report.Report) (runs, sides int) {
	for _, run := range rep.Runs {
		if run.Result != nil && len(run.Result.Sides) > 0 {
			runs++
			sides += len(run.Result.Sides)
		}
	}
	return runs, sides
}

// The demo's scenario, with its soft-RoCE variables, to a pipe: no
// escape sequence, plain progress lines, and a counters line only for
// the side whose count moved, holding only that count. --verbose brings
// back every side's line with its zeros and what its driver lacks; the
// JSON keeps them either way.
func TestDemoReportPiped(t *testing.T) {
	demo := []string{"../../scenarios/roce-sweep.yaml", "--set", "lat_iters=300", "--set", "bw_iters=8", "--set", "max_size=2MiB",
		"--set", "p99_limit=50ms", "--set", "bw_fraction=0.0005", "--device", "rxe1", "--peer", "loopback"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", demo},
		{"bench", []string{"bench", "--device", "rxe1", "--measure", "both", "--sizes", "2,4KiB", "--qps", "1,4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep := piped(t, tc.args...)
			if i := strings.IndexByte(out, 0x1b); i >= 0 {
				t.Errorf("an escape sequence at byte %d: %q", i, out[max(i-40, 0):min(i+40, len(out))])
			}
			if strings.Contains(out, "\r") {
				t.Errorf("a carriage return in the piped output:\n%s", out)
			}
			runs, sides := sidedRuns(rep)
			if runs < 2 || runs != len(rep.Runs) {
				t.Fatalf("%d of %d runs have sides; the replay gives every run two", runs, len(rep.Runs))
			}
			if n := strings.Count(out, "\nrun "); n != len(rep.Runs)-1 || !strings.HasPrefix(out, "run 1/") {
				t.Errorf("%d progress lines after the first, want a plain line per run (%d):\n%s", n, len(rep.Runs), out)
			}
			quiet := counterLines(out)
			if len(quiet) != runs {
				t.Errorf("%d counters lines, want %d, the requesters' whose seq_errors moved:\n%s", len(quiet), runs, strings.Join(quiet, "\n"))
			}
			for _, l := range quiet {
				if zeroCount.MatchString(l) || strings.Contains(l, "not reported") || !strings.HasSuffix(l, ": counters rxe1 (requester): seq_errors 2") {
					t.Errorf("counters line %q, want only the count that moved", l)
				}
			}
			// The JSON keeps the zeros the text left out.
			if v, ok := rep.Runs[0].Result.Sides[1].Counters.Categories.Values[portstats.Retransmits]; !ok || v != 0 {
				t.Errorf("JSON: responder retransmits %d (%v), want a recorded 0", v, ok)
			}

			out, _ = piped(t, append(tc.args, "--verbose")...)
			if strings.IndexByte(out, 0x1b) >= 0 {
				t.Errorf("--verbose: an escape sequence in %q", out)
			}
			verbose := counterLines(out)
			if len(verbose) != sides {
				t.Errorf("--verbose: %d counters lines, want one per side (%d):\n%s", len(verbose), sides, strings.Join(verbose, "\n"))
			}
			for i, l := range verbose {
				want := "counters rxe1 (requester): retransmits 0, seq_errors 2 (not reported: cnp_sent, cnp_handled, ecn_marked, pause_*)"
				if i%2 == 1 {
					want = "counters rxe0 (responder): retransmits 0, seq_errors 0 (not reported: cnp_sent, cnp_handled, ecn_marked, pause_*)"
				}
				if !strings.HasSuffix(l, ": "+want) {
					t.Errorf("--verbose: counters line %q, want it to end %q", l, want)
				}
			}
		})
	}
}

// TestRecordedReportText: the text writers as the command calls them, on
// the recorded report: without --verbose no counters line shows a zero
// or what a driver lacks, and every side with a count that moved keeps
// its line.
func TestRecordedReportText(t *testing.T) {
	rep, err := compare.Read(recorded)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, run := range rep.Runs {
		if run.Result == nil {
			continue
		}
		for _, s := range run.Result.Sides {
			if c := s.Counters.Categories; c != nil && (c.Values[portstats.Retransmits] != 0 || c.Values[portstats.SeqErrors] != 0) {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Fatalf("%s: no side whose count moved", recorded)
	}
	for name, write := range map[string]func(report.TextOptions, io.Writer, *report.Report) error{
		"run": newScenarioCmdsText(), "bench": newBenchCmdText(),
	} {
		var b bytes.Buffer
		if err := write(report.TextOptions{}, &b, rep); err != nil {
			t.Fatal(err)
		}
		lines := counterLines(b.String())
		if len(lines) != moved {
			t.Errorf("%s: %d counters lines, want %d:\n%s", name, len(lines), moved, strings.Join(lines, "\n"))
		}
		for _, l := range lines {
			if zeroCount.MatchString(l) || strings.Contains(l, "not reported") || strings.Contains(l, "no counter categories") {
				t.Errorf("%s: counters line %q", name, l)
			}
		}
		if bytes.IndexByte(b.Bytes(), 0x1b) >= 0 {
			t.Errorf("%s: an escape sequence in %q", name, b.String())
		}
	}
}

// newScenarioCmdsText and newBenchCmdText are the text writers the run
// and bench commands print with.
func newScenarioCmdsText() func(report.TextOptions, io.Writer, *report.Report) error {
	run, _ := newScenarioCmds(kingpin.New("rdmarun", ""))
	return run.text
}

func newBenchCmdText() func(report.TextOptions, io.Writer, *report.Report) error {
	return newBenchCmd(kingpin.New("rdmarun", "")).text
}
