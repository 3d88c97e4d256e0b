package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/runner/report"
)

// TestRunsFlag: rdmarun run and bench stream their runs to --runs, and
// the file reads back as the runs of the --json report of the same run.
func TestRunsFlag(t *testing.T) {
	withTarget(t, 1)
	dir := t.TempDir()
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	for _, tc := range []struct {
		name string
		args []string
		runs int
	}{
		{name: "run", args: []string{"run", plain}, runs: 2},
		{name: "bench", args: []string{"bench", "--device", "rxe0"}, runs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, js := filepath.Join(dir, tc.name+".jsonl"), filepath.Join(dir, tc.name+".json")
			code, _, stderr := runCLI(t, append(tc.args, "--runs", runs, "--json", js)...)
			if code != exitOK {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			f, err := os.Open(runs)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, got, err := report.ReadRuns(f)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(js)
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			if h.Schema != report.RunsSchema || h.Scenario != rep.Scenario || h.Tool != rep.Tool || !h.Started.Equal(rep.Started) {
				t.Errorf("header %+v, report %s %s started %v", h, rep.Scenario, rep.Tool, rep.Started)
			}
			if len(got) != tc.runs {
				t.Fatalf("%d runs in the file, want %d", len(got), tc.runs)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(rep.Runs)
			if string(a) != string(b) {
				t.Errorf("the runs file's runs differ from the report's:\nfile   %s\nreport %s", a, b)
			}
		})
	}
}

// TestRunsFlagErrors: --runs without a file is refused before anything
// runs, and a file that cannot be created fails before the tests.
func TestRunsFlagErrors(t *testing.T) {
	withTarget(t, 1)
	dir := t.TempDir()
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	for _, tc := range []struct {
		name string
		runs string
		code int
		err  string
	}{
		{name: "stdout", runs: "-", code: exitInvalid, err: "--runs needs a file name"},
		{name: "no directory", runs: filepath.Join(dir, "none", "runs.jsonl"), code: exitEnvironment, err: "--runs: open " + filepath.Join(dir, "none", "runs.jsonl")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "run", plain, "--runs", tc.runs)
			if code != tc.code || !strings.Contains(stderr, tc.err) {
				t.Errorf("exit %d, want %d, and stderr with %q:\n%s", code, tc.code, tc.err, stderr)
			}
			if strings.Contains(stderr, "run 1/") {
				t.Errorf("a run ran:\n%s", stderr)
			}
		})
	}
}

// TestRunsFlagWriteError: a runs file that cannot be written is told
// once, the tests go on and the --json report holds every run, and the
// exit code is the environment's.
func TestRunsFlagWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	withTarget(t, 1)
	dir := t.TempDir()
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	js := filepath.Join(dir, "out.json")
	code, _, stderr := runCLI(t, "run", plain, "--runs", "/dev/full", "--json", js)
	if code != exitEnvironment {
		t.Errorf("exit %d, want %d:\n%s", code, exitEnvironment, stderr)
	}
	if n := strings.Count(stderr, "--runs /dev/full"); n != 2 {
		t.Errorf("the error is told %d times, want once as it happens and once at the end:\n%s", n, stderr)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Passed != 2 {
		t.Errorf("the report after a runs file error: %+v, want both runs passed", rep.Summary)
	}
}
