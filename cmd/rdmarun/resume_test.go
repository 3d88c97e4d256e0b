package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/runner/report"
)

// readRunsFile reads a runs file the CLI wrote.
func readRunsFile(t *testing.T, path string) (report.RunsHeader, []report.Run) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, runs, err := report.ReadRuns(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return h, runs
}

// TestResumeFlag: a runs file cut after its first run (and mid-line, as
// a crash leaves it) is resumed: the report holds the kept run as it was
// and the other run new; --runs naming the same file appends to it,
// another file gets every run.
func TestResumeFlag(t *testing.T) {
	withTarget(t, 1)
	dir := t.TempDir()
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	full := filepath.Join(dir, "full.jsonl")
	if code, _, stderr := runCLI(t, "run", plain, "--runs", full); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cut := lines[0] + lines[1] + lines[2][:len(lines[2])/2]
	header, before := readRunsFile(t, full)
	for _, tc := range []struct {
		name, runs string
		same       bool
	}{
		{name: "same file", same: true},
		{name: "another file", runs: "other.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			if err := os.WriteFile(part, []byte(cut), 0o644); err != nil {
				t.Fatal(err)
			}
			runs := part
			if !tc.same {
				runs = filepath.Join(dir, tc.runs)
			}
			js := filepath.Join(dir, "out.json")
			code, _, stderr := runCLI(t, "run", plain, "--resume", part, "--runs", runs, "--json", js)
			if code != exitOK {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "that run runs again") {
				t.Errorf("the cut last line is not told:\n%s", stderr)
			}
			b, err := os.ReadFile(js)
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Runs) != 2 || rep.Summary.Passed != 2 {
				t.Fatalf("report %+v, want both runs passed", rep.Summary)
			}
			if !rep.Runs[0].Started.Equal(before[0].Started) {
				t.Errorf("run 0 started %v, the resumed file's %v: it ran again", rep.Runs[0].Started, before[0].Started)
			}
			if rep.Runs[1].Started.Equal(before[1].Started) {
				t.Error("run 1 was not run again: it was cut from the file")
			}
			h, got := readRunsFile(t, runs)
			if len(got) != 2 || !got[0].Started.Equal(before[0].Started) || !got[1].Started.Equal(rep.Runs[1].Started) {
				t.Errorf("--runs %s holds %d runs, want the kept one and the new one", tc.name, len(got))
			}
			if tc.same && !h.Started.Equal(header.Started) {
				t.Errorf("the appended file's header started %v, want the first run's %v", h.Started, header.Started)
			}
			if !tc.same {
				if b, err := os.ReadFile(part); err != nil || string(b) != cut {
					t.Errorf("the --resume file changed (%v): want it left alone", err)
				}
			}
		})
	}
}

// TestResumeFlagErrors: a runs file of another scenario, or more than
// one scenario, is refused before anything runs, exit 3.
func TestResumeFlagErrors(t *testing.T) {
	withTarget(t, 1)
	dir := t.TempDir()
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	gate := scenarioFile(t, dir, "gate.yaml", gateYAML, "errors == 0", "errors == 0")
	runs := filepath.Join(dir, "gate.jsonl")
	if code, _, stderr := runCLI(t, "run", gate, "--runs", runs); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{name: "another scenario", args: []string{"run", plain, "--resume", runs}, err: `gate.jsonl:1: the runs are of scenario "gate", not "plain"`},
		{name: "two scenarios", args: []string{"run", plain, gate, "--resume", runs}, err: "--resume takes one scenario"},
		{name: "no file", args: []string{"run", plain, "--resume", filepath.Join(dir, "none.jsonl")}, err: "--resume: open "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitInvalid || !strings.Contains(stderr, tc.err) {
				t.Errorf("exit %d, want %d, and stderr with %q:\n%s", code, exitInvalid, tc.err, stderr)
			}
			if strings.Contains(stderr, "run 1/") {
				t.Errorf("a run ran:\n%s", stderr)
			}
		})
	}
}
