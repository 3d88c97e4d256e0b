//go:build testbed

package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/runner/report"
)

// TestFleetVMResume: a 4-host fleet run streaming its runs (--runs) is
// killed with SIGKILL after some pairs finished, then resumed from its
// runs file (--resume). The resumed report holds every run once, all
// passed, the kept runs exactly as the file holds them, and the same
// matrices (metrics, hosts, which cells ran, their statuses) as an
// uninterrupted run of the same scenario; no suspect in either.
func TestFleetVMResume(t *testing.T) {
	const file = "testdata/coordinator/vm-baseline.yaml"
	tokenFile := startFleetFile(t, file, nil)
	dir := t.TempDir()
	runs, resumed, full := filepath.Join(dir, "runs.jsonl"), filepath.Join(dir, "resumed.json"), filepath.Join(dir, "full.json")

	cmd := exec.Command(benchBin(t), file, "--token-file", tokenFile, "--runs", runs)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// 6 pairs of 3 runs, 2 pairs at once: kill once a round's pairs are
	// done and the next round has begun.
	kept := waitForRuns(t, runs, 6, 3*time.Minute)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("killed after %d runs in %s:\n%s", kept, runs, out.String())
	before := readRunsFile(t, runs)

	code, rep := fleetCLI(t, file, tokenFile, "--resume", runs, "--runs", runs, "--json", resumed)
	if code != 0 {
		t.Fatalf("resumed run: exit %d, want 0", code)
	}
	code, ref := fleetCLI(t, file, tokenFile, "--json", full)
	if code != 0 {
		t.Fatalf("uninterrupted run: exit %d, want 0", code)
	}

	if len(rep.Runs) != len(ref.Runs) {
		t.Fatalf("resumed report has %d runs, the uninterrupted one %d", len(rep.Runs), len(ref.Runs))
	}
	for _, r := range rep.Runs {
		if r.Status != report.Passed {
			t.Errorf("%s run %d: %s %s, want passed", pairOf(r), r.Index, r.Status, r.Error)
		}
	}
	// A kept run is the file's, byte for byte, not run again.
	for _, k := range before {
		if k.Status != report.Passed {
			continue
		}
		found := false
		for _, r := range rep.Runs {
			if r.Index == k.Index && pairOf(r) == pairOf(k) && r.Started.Equal(k.Started) {
				a, _ := json.Marshal(k)
				b, _ := json.Marshal(r)
				if !bytes.Equal(a, b) {
					t.Errorf("%s run %d was kept but changed:\nfile   %s\nreport %s", pairOf(k), k.Index, a, b)
				}
				found = true
			}
		}
		if !found {
			t.Errorf("%s run %d (passed, in the runs file) was not kept", pairOf(k), k.Index)
		}
	}
	if len(rep.Fleet.Suspects) != 0 || len(ref.Fleet.Suspects) != 0 {
		t.Errorf("suspects: resumed %+v, uninterrupted %+v; want none", rep.Fleet.Suspects, ref.Fleet.Suspects)
	}
	if len(rep.Fleet.Matrices) != len(ref.Fleet.Matrices) {
		t.Fatalf("%d matrices resumed, %d uninterrupted", len(rep.Fleet.Matrices), len(ref.Fleet.Matrices))
	}
	for i, m := range rep.Fleet.Matrices {
		r := ref.Fleet.Matrices[i]
		if m.Metric != r.Metric || !slices.Equal(m.Hosts, r.Hosts) {
			t.Errorf("matrix %d: %s over %v resumed, %s over %v uninterrupted", i, m.Metric, m.Hosts, r.Metric, r.Hosts)
			continue
		}
		for a := range m.Cells {
			for b := range m.Cells[a] {
				x, y := m.Cells[a][b], r.Cells[a][b]
				switch {
				case (x == nil) != (y == nil):
					t.Errorf("%s %s -> %s: ran %v resumed, %v uninterrupted", m.Metric, m.Hosts[a], m.Hosts[b], x != nil, y != nil)
				case x != nil && x.Status != y.Status:
					t.Errorf("%s %s -> %s: %s resumed, %s uninterrupted", m.Metric, m.Hosts[a], m.Hosts[b], x.Status, y.Status)
				}
			}
		}
	}
}

// waitForRuns waits until the runs file holds at least n runs (lines
// after the header), and returns how many it holds.
func waitForRuns(t *testing.T, path string, n int, limit time.Duration) int {
	t.Helper()
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil {
			if lines := bytes.Count(b, []byte("\n")) - 1; lines >= n {
				return lines
			}
		}
	}
	t.Fatalf("the runs file held fewer than %d runs after %v", n, limit)
	return 0
}

// readRunsFile reads a runs file that a SIGKILL may have cut.
func readRunsFile(t *testing.T, path string) []report.Run {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, runs, err := report.ReadRuns(f)
	if err != nil && !errors.Is(err, report.ErrTruncated) {
		t.Fatal(err)
	}
	return runs
}

// fleetCLI runs rdmarun on a fleet scenario with args and reads the JSON
// report that --json (the last argument's value) wrote.
func fleetCLI(t *testing.T, file, tokenFile string, args ...string) (int, *report.Report) {
	t.Helper()
	cmd := exec.Command(benchBin(t), append([]string{file, "--token-file", tokenFile}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	t.Logf("rdmarun %v: exit %d\n%s", args, code, out)
	b, err := os.ReadFile(args[len(args)-1])
	if err != nil {
		t.Fatal(err)
	}
	rep := &report.Report{}
	if err := json.Unmarshal(b, rep); err != nil || rep.Fleet == nil {
		t.Fatalf("the JSON report: %v, fleet %v", err, rep.Fleet)
	}
	return code, rep
}
