package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/compare"
	"github.com/rdmarun/rdmarun/runner/report"
)

// synthTarget answers every run without a device: latency runs with
// 2,000 round trips near 10 us, bandwidth runs near 10 Gb/s, both times
// factor, from a stream seeded by the call, so that two targets answer
// alike run for run.
type synthTarget struct {
	factor float64
	calls  uint64
}

func (s *synthTarget) Run(_ context.Context, spec rdma.Test) (*rdma.Result, error) {
	s.calls++
	r := rand.New(rand.NewPCG(1, s.calls))
	res := &rdma.Result{Spec: spec, Requester: rdma.EndpointInfo{Device: "rxe0", Port: 1}, Responder: rdma.EndpointInfo{Device: "rxe0", Port: 1}}
	if spec.Measure == rdma.MeasureBandwidth {
		bps := 1.25e9 * s.factor * (1 + 0.01*r.NormFloat64())
		res.Bandwidth = &rdma.BandwidthStats{Directions: []rdma.Direction{{BytesPerSecond: bps, MessagesPerSec: bps / 65536}}}
		return res, nil
	}
	ns := make([]int64, 2000)
	for i := range ns {
		ns[i] = 10 * int64(s.factor*(1000+100*r.ExpFloat64()))
	}
	slices.Sort(ns)
	var b []rdma.Bucket
	for _, v := range ns {
		if k := len(b) - 1; k >= 0 && b[k].Ns == v {
			b[k].Count++
		} else {
			b = append(b, rdma.Bucket{Ns: v, Count: 1})
		}
	}
	q := func(p float64) float64 { return float64(ns[int(p*float64(len(ns)))-1]) }
	res.Latency = &rdma.LatencyStats{Buckets: b, RTT: rdma.Summary{Count: len(ns), Min: float64(ns[0]), Max: float64(ns[len(ns)-1]),
		Mean: q(0.5), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999), P9999: q(0.9999)}}
	return res, nil
}

func (s *synthTarget) LinkGbps() float64 { return 100 }
func (s *synthTarget) Describe() string  { return "synthetic" }
func (s *synthTarget) Close() error      { return nil }

// withTarget makes scenarios run on a fresh synthTarget of factor.
func withTarget(t *testing.T, factor float64) {
	old := openTarget
	openTarget = func(*where, *runner.Scenario) (runner.Target, error) { return &synthTarget{factor: factor}, nil }
	t.Cleanup(func() { openTarget = old })
}

const (
	casesYAML = `
cases:
  - name: lat
    op: write
    measure: latency
    sizes: [64]
    iterations: 2000
    pass: PASSLAT
  - name: bw
    op: write
    measure: bandwidth
    sizes: [64KiB]
    pass: PASSBW
`
	// plainYAML judges nothing against a baseline: what makes the first.
	plainYAML = "name: plain\ndevice: rxe0\n"
	// gateYAML judges the same cases against the baseline it is given.
	gateYAML = "name: gate\ndevice: rxe0\n"
)

func scenarioFile(t *testing.T, dir, name, head, lat, bw string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	doc := head + strings.NewReplacer("PASSLAT", lat, "PASSBW", bw).Replace(casesYAML)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	withDevices(t, func() ([]rdma.Device, error) { t.Fatal("devices listed"); return nil, nil })
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// noTemp fails when a temporary file of an atomic write is left in dir.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(tmp) > 0 {
		t.Errorf("left behind: %v", tmp)
	}
}

// TestSaveBaselineRoundTrip: a passing run saved with --save-baseline is
// the baseline a later, identical run is judged against, and is not
// regressed; a slower one regresses, and is not saved unless forced.
func TestSaveBaselineRoundTrip(t *testing.T) {
	dir := t.TempDir()
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	gate := scenarioFile(t, dir, "gate.yaml", gateYAML, "[not regressed(p99), p99 <= baseline.p99 * 1.05]", "bw_gbps >= baseline.bw_gbps * 0.95")
	base := filepath.Join(dir, "base.json")

	withTarget(t, 1)
	if code, _, stderr := runCLI(t, plain, "--save-baseline", base); code != exitOK || !strings.Contains(stderr, "saved the baseline to "+base+" (2 runs)") {
		t.Fatalf("saving: exit %d, stderr:\n%s", code, stderr)
	}
	noTemp(t, dir)
	saved, err := compare.Read(base)
	if err != nil {
		t.Fatalf("the saved baseline does not read back: %v", err)
	}
	// The same JSON as --json writes.
	withTarget(t, 1)
	jsonOut := filepath.Join(dir, "plain.json")
	if code, _, stderr := runCLI(t, plain, "--json", jsonOut); code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	viaJSON, err := compare.Read(jsonOut)
	if err != nil || !sameRuns(viaJSON, saved) {
		t.Errorf("--json and --save-baseline differ: %v", err)
	}

	// An identical run against it: nothing regressed.
	withTarget(t, 1)
	out := filepath.Join(dir, "gate.json")
	code, _, stderr := runCLI(t, gate, "--baseline", base, "--json", out)
	if code != exitOK {
		t.Fatalf("identical run: exit %d, stderr:\n%s", code, stderr)
	}
	rep, err := compare.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Runs[0].Verdicts[0]
	if v.Expr != "not regressed(p99)" || !v.Passed || v.Values["ratio(p99)"] != 1 {
		t.Errorf("verdict %+v", v)
	}
	if got, want := rep.Runs[0].Verdicts[1].Values["baseline.p99"], saved.Runs[0].Result.Latency.RTT.P99/1e3; got != want {
		t.Errorf("baseline.p99 = %v, want the saved run's %v", got, want)
	}

	// 30% slower: regressed, said with the values it was judged on, and
	// not saved as the next baseline.
	withTarget(t, 1.3)
	next := filepath.Join(dir, "next.json")
	code, stdout, stderr := runCLI(t, gate, "--baseline", base, "--save-baseline", next)
	if code != exitFailed {
		t.Errorf("slower run: exit %d, want %d; stderr:\n%s", code, exitFailed, stderr)
	}
	if !strings.Contains(stdout, "FAILED not regressed(p99) with ratio(p99)=1.3") {
		t.Errorf("the text does not show the comparison's values:\n%s", stdout)
	}
	if !strings.Contains(stderr, "--save-baseline "+next+": not saved: 1 run failed a condition; a baseline should be a run you accept (add --force-save-baseline to save it anyway)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if _, err := os.Stat(next); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failing run was saved: %v", err)
	}

	// Forced, it is saved; and a baseline may be replaced by its own run.
	withTarget(t, 1.3)
	if code, _, stderr := runCLI(t, gate, "--baseline", base, "--save-baseline", base, "--force-save-baseline"); code != exitFailed || !strings.Contains(stderr, "saved the baseline") {
		t.Errorf("forced: exit %d, stderr:\n%s", code, stderr)
	}
	noTemp(t, dir)
	if again, err := compare.Read(base); err != nil || again.Scenario != "gate" {
		t.Errorf("the baseline was not replaced by the forced run: %v", err)
	}
}

// sameRuns compares two reports' runs, which are what a baseline is.
func sameRuns(a, b *report.Report) bool {
	strip := func(r *report.Report) []byte {
		runs := slices.Clone(r.Runs)
		for i := range runs {
			runs[i].Started, runs[i].Seconds = time.Time{}, 0
		}
		j, _ := json.Marshal(runs)
		return j
	}
	return bytes.Equal(strip(a), strip(b))
}

// TestBaselineFlagErrors: the baseline flags name one report of one
// scenario, and a file that is no report is refused before anything runs.
func TestBaselineFlagErrors(t *testing.T) {
	dir := t.TempDir()
	gate := scenarioFile(t, dir, "gate.yaml", gateYAML, "not regressed(p99)", "errors == 0")
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	notReport := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(notReport, []byte(`{"schema": "something/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	withTarget(t, 1)
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{gate}, `pass: "not regressed(p99)" compares with a baseline, and this scenario has none; add baseline: FILE`},
		{[]string{gate, "--baseline", notReport}, gate + ": --baseline: " + notReport + `: not an rdmarun report (schema "something/v1"); write one with rdmarun --json FILE`},
		{[]string{"validate", gate, "--baseline", filepath.Join(dir, "nope.json")}, gate + ": --baseline: open " + filepath.Join(dir, "nope.json") + ": no such file or directory"},
		{[]string{gate, plain, "--baseline", notReport}, "--baseline names one report, and 2 scenario files are given"},
		{[]string{plain, plain, "--save-baseline", filepath.Join(dir, "b.json")}, "--save-baseline writes one report, and 2 scenario files are given"},
		{[]string{plain, "--save-baseline", "-"}, "--save-baseline: give a file"},
		// A baseline nothing reads is refused before it is read.
		{[]string{plain, "--baseline", notReport}, plain + ": --baseline: no condition reads the baseline; add one to a case's pass:"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != exitInvalid || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d and %q", tc.args, code, stderr, exitInvalid, tc.stderr)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "b.json")); len(files) > 0 {
		t.Errorf("an invalid invocation wrote %v", files)
	}
}

// TestValidateNamesTheBaseline: validate reads the baseline and says what
// the scenario is judged against.
func TestValidateNamesTheBaseline(t *testing.T) {
	dir := t.TempDir()
	plain := scenarioFile(t, dir, "plain.yaml", plainYAML, "errors == 0", "errors == 0")
	base := filepath.Join(dir, "base.json")
	withTarget(t, 1)
	if code, _, stderr := runCLI(t, plain, "--save-baseline", base); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	gate := scenarioFile(t, dir, "gate.yaml", gateYAML+"baseline: base.json\n", "not regressed(p99)", "errors == 0")
	code, stdout, stderr := runCLI(t, "validate", gate)
	if want := gate + ": scenario gate is valid: 2 runs, judged against " + base + " (2 runs)\n"; code != exitOK || stdout != want {
		t.Errorf("exit %d, stdout %q, want %q; stderr %s", code, stdout, want, stderr)
	}
}

// TestWriteFileAtomic: a write that fails leaves the old file as it was
// and nothing beside it.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "base.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := writeFileAtomic(p, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return errors.New("disk full")
	})
	if err == nil || err.Error() != "writing "+p+": disk full" {
		t.Errorf("error %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("the old file holds %q", b)
	}
	noTemp(t, dir)
	if err := writeFileAtomic(p, func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("the file holds %q", b)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "no", "such", "dir.json"), func(io.Writer) error { return nil }); err == nil {
		t.Error("no error writing into a missing directory")
	}
	noTemp(t, dir)
}
