//go:build testbed

package runner

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// vmLoopback is rxe1 -> rxe0 in this process, closed when the test ends.
func vmLoopback(t *testing.T) *Loopback {
	t.Helper()
	target := &Loopback{
		Local: Endpoint{Device: "rxe1", Port: 1, GIDIndex: rdma.AutoGIDIndex},
		Peer:  Endpoint{Device: "rxe0", Port: 1, GIDIndex: rdma.AutoGIDIndex},
	}
	t.Cleanup(func() { target.Close() })
	return target
}

// executeLogged runs sc on target as file and logs the report as write
// (report.Text or report.Compact) prints it, returning the report and
// that text.
func executeLogged(t *testing.T, sc *Scenario, target Target, file string, write func(io.Writer, *report.Report) error) (*report.Report, string) {
	t.Helper()
	rep, err := Execute(context.Background(), sc, target, Options{Tool: "rdmarun test", File: file})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := write(&text, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	return rep, text.String()
}

// checkAllPassed fails the test unless every run of sc passed.
func checkAllPassed(t *testing.T, sc *Scenario, rep *report.Report) {
	t.Helper()
	if rep.Summary.Passed != len(sc.Runs()) || ExitStatus(rep) != 0 {
		t.Errorf("summary %+v, exit %d", rep.Summary, ExitStatus(rep))
	}
}

// checkSchema fails the test unless rep's JSON matches report/schema.json.
func checkSchema(t *testing.T, rep *report.Report) {
	t.Helper()
	var js bytes.Buffer
	if err := report.JSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if err := readSchema(t).Validate(inst); err != nil {
		t.Errorf("the JSON report does not match report/schema.json:\n%v", err)
	}
}
