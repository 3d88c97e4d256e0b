package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// latencyReport is a report of one 64 B write latency run whose 1,000
// round trips spread evenly over 100 values from ns up.
func latencyReport(t *testing.T, dir, name, caseName string, ns int64) string {
	t.Helper()
	spec, err := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Size: 64}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	l := &rdma.LatencyStats{RTT: rdma.Summary{Count: 1000}}
	for i := range int64(100) {
		l.Buckets = append(l.Buckets, rdma.Bucket{Ns: ns + i*ns/500, Count: 10})
	}
	rep := &report.Report{Schema: report.Schema, Scenario: "s", Runs: []report.Run{{Case: caseName, Status: report.Passed, Spec: spec,
		Result: &rdma.Result{Latency: l, Requester: rdma.EndpointInfo{Device: "rxe1"}, Responder: rdma.EndpointInfo{Device: "rxe0"}}}}}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompareExitCodes: 0 for no significant change, 1 for a regression,
// 3 for tests in one report only or a file that is not a report, each with
// the reason on stderr.
func TestCompareExitCodes(t *testing.T) {
	dir := t.TempDir()
	base := latencyReport(t, dir, "base.json", "lat", 20000)
	same := latencyReport(t, dir, "same.json", "lat", 20000)
	slower := latencyReport(t, dir, "slower.json", "lat", 24000)
	slightly := latencyReport(t, dir, "slightly.json", "lat", 20600) // 3%: inside the 5% smallest effect
	other := latencyReport(t, dir, "other.json", "renamed", 20000)
	truncated := filepath.Join(dir, "truncated.json")
	data, _ := os.ReadFile(base)
	if err := os.WriteFile(truncated, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"same", []string{base, same}, exitOK, "1 compared: 0 regressed, 0 improved, 1 no significant change", ""},
		{"slower", []string{base, slower}, exitFailed, "regressed              lat write latency 64 B", "1 of 1 tests regressed"},
		{"inside the smallest effect", []string{base, slightly}, exitOK, "no significant change  lat", ""},
		{"smallest effect lowered", []string{"--min-effect", "1%", base, slightly}, exitFailed, "regressed", "1 of 1 tests regressed"},
		{"unmatched", []string{base, other}, exitInvalid, "unmatched: renamed write latency 64 B qps=1 busy_poll is only in new", "2 tests are in one report only"},
		{"truncated", []string{base, truncated}, exitInvalid, "", "truncated.json: cut short after"},
		{"bad effect", []string{"--min-effect", "five", base, same}, exitInvalid, "", `--min-effect "five": want a percentage (5%) or a fraction (0.05)`},
		{"effect out of range", []string{"--min-effect", "150%", base, same}, exitInvalid, "", "smallest effect 1.5: want 0 <= effect < 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"compare"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr.String())
			}
		})
	}
}

// TestCompareJSONToStdout: with --json - the JSON alone is on stdout.
func TestCompareJSONToStdout(t *testing.T) {
	dir := t.TempDir()
	base := latencyReport(t, dir, "base.json", "lat", 20000)
	slower := latencyReport(t, dir, "slower.json", "lat", 24000)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"compare", "--json", "-", base, slower}, &stdout, &stderr); code != exitFailed {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got struct {
		Schema string `json:"schema"`
		Runs   []struct {
			Verdict string `json:"verdict"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not the JSON alone: %v\n%s", err, stdout.String())
	}
	if got.Schema != "rdmarun.compare/v1" || len(got.Runs) != 1 || got.Runs[0].Verdict != "regressed" {
		t.Errorf("JSON %+v", got)
	}
	if !strings.Contains(stderr.String(), "regressed") {
		t.Errorf("the text did not go to stderr: %s", stderr.String())
	}
}
