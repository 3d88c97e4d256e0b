//go:build testbed

package runner

import (
	"testing"

	"github.com/rdmarun/rdmarun/runner/report"
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
	rep, _ := executeLogged(t, sc, vmLoopback(t), "scenarios/cm-setup.yaml", report.Compact)
	checkAllPassed(t, sc, rep)
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
	checkSchema(t, rep)
}
