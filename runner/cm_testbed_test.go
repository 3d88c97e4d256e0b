//go:build testbed

package runner

import (
	"bytes"
	"context"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestCMSetupScenario runs scenarios/cm-setup.yaml on rxe1 -> rxe0:
// traffic over CM-connected QPs, then measure connect at 1 to 1,024 QPs,
// one after another and 16 at once. Every run passes, every connect run
// reports each of its QPs and its rate, and the JSON report matches the
// schema.
func TestCMSetupScenario(t *testing.T) {
	sc, err := Load("../scenarios/cm-setup.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	target := &Loopback{
		Local: Endpoint{Device: "rxe1", Port: 1, GIDIndex: rdma.AutoGIDIndex},
		Peer:  Endpoint{Device: "rxe0", Port: 1, GIDIndex: rdma.AutoGIDIndex},
	}
	defer target.Close()
	rep, err := Execute(context.Background(), sc, target, Options{Tool: "rdmarun test", File: "scenarios/cm-setup.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := report.Compact(&text, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if rep.Summary.Passed != len(sc.Runs()) || ExitStatus(rep) != 0 {
		t.Errorf("summary %+v, exit %d", rep.Summary, ExitStatus(rep))
	}
	for _, r := range rep.Runs {
		if r.Result == nil || r.Result.Connect == nil {
			t.Errorf("run %d (%s %s) has no CM set-up: %s", r.Index, r.Case, r.Label(), r.Error)
			continue
		}
		c := r.Result.Connect
		if len(c.QPs) != r.Spec.QPs || c.PerSecond <= 0 || c.Parallel != r.Spec.ConnectParallel {
			t.Errorf("run %d (%s %s): %d QPs' times of %d, %.1f conn/s, %d at once", r.Index, r.Case, r.Label(), len(c.QPs), r.Spec.QPs, c.PerSecond, c.Parallel)
		}
	}
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
