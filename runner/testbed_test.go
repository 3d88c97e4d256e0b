//go:build testbed

// Runs scenarios/roce-sweep.yaml end to end inside the soft-RoCE VM
// (make testbed-test): rxe1 against rxe0 in this process, with the
// iteration counts and thresholds scaled for an emulated CPU through
// variables, not a second copy of the file. All four outputs are written
// and read back.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Soft-RoCE under emulation moves about 0.1 Gb/s of a nominal 10 and
// its tails reach milliseconds: these keep the file's structure and loosen
// only the numbers.
var emulated = map[string]string{
	"lat_iters": "100", "bw_iters": "4", "max_size": "512KiB", "p99_limit": "50ms", "bw_fraction": "0.0005",
}

func TestRoCESweepEndToEnd(t *testing.T) {
	sc, err := Load("../scenarios/roce-sweep.yaml", emulated)
	if err != nil {
		t.Fatal(err)
	}
	target := &Loopback{
		Local:      Endpoint{Device: "rxe1", Port: 1, GIDIndex: rdma.AutoGIDIndex},
		Peer:       Endpoint{Device: "rxe0", Port: 1, GIDIndex: rdma.AutoGIDIndex},
		MaxMessage: sc.MaxSize(),
	}
	defer target.Close()
	if target.LinkGbps() <= 0 {
		t.Fatal("no link rate for rxe1")
	}
	rep, _ := executeLogged(t, sc, target, "scenarios/roce-sweep.yaml", report.Text)
	checkAllPassed(t, sc, rep)
	for _, r := range rep.Runs {
		if len(r.Verdicts) == 0 || r.Result == nil {
			t.Errorf("run %d (%s %s) has no verdict or no result", r.Index, r.Case, r.Label())
		}
	}

	dir := t.TempDir()
	for name, write := range map[string]func(*bytes.Buffer) error{
		"roce-sweep.json":      func(b *bytes.Buffer) error { return report.JSON(b, rep) },
		"roce-sweep.junit.xml": func(b *bytes.Buffer) error { return report.JUnit(b, rep) },
		"roce-sweep.html":      func(b *bytes.Buffer) error { return report.HTML(b, rep) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The real output must match the documented schema.
	schema := readSchema(t)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(read("roce-sweep.json")))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Errorf("the JSON report does not match report/schema.json:\n%v", err)
	}
	var back report.Report
	if err := json.Unmarshal(read("roce-sweep.json"), &back); err != nil || back.Schema != report.Schema || len(back.Runs) != len(rep.Runs) {
		t.Errorf("JSON: %v, schema %q, %d runs", err, back.Schema, len(back.Runs))
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(read("roce-sweep.junit.xml"), &suites); err != nil || suites.Tests != len(rep.Runs) || suites.Failures != 0 {
		t.Errorf("JUnit: %v, %+v", err, suites)
	}
	if html := string(read("roce-sweep.html")); strings.Count(html, `class="chart"`) < 5 {
		t.Errorf("HTML has %d charts", strings.Count(html, `class="chart"`))
	}
}

// TestQPZerosReachTheQP: retry_cnt 0 and timeout 0 written in a scenario
// reach the driver's QP, read back with ibv_query_qp, rather than being
// taken for "unset" and replaced by the defaults somewhere on the way.
func TestQPZerosReachTheQP(t *testing.T) {
	doc := `
name: qp-zeros
cases:
  - name: zeros
    op: write
    measure: latency
    iterations: 20
    retry_cnt: 0
    timeout: 0
    min_rnr_timer: 5
`
	sc, err := Parse("qp-zeros.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Execute(context.Background(), sc, vmLoopback(t), Options{Tool: "rdmarun test"})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Runs[0]
	if run.Result == nil {
		t.Fatalf("no result: %s", run.Error)
	}
	got := run.Result.Spec.QP
	if got.RetryCnt != 0 || got.Timeout != 0 || got.MinRNRTimer != 5 {
		t.Errorf("the driver's QP has %+v; want retry_cnt 0, timeout 0, min_rnr_timer 5", got)
	}
	if d := rdma.DefaultQPAttrs(); got.RNRRetry != d.RNRRetry || got.HopLimit != d.HopLimit || got.MTU < 256 {
		t.Errorf("the driver's QP has %+v; the settings not given should be the defaults %+v, with the path MTU", got, d)
	}
}
