//go:build testbed

package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/runner/report"
)

// TestQPScalingScenario runs scenarios/qp-scaling.yaml on rxe1 -> rxe0,
// its sweep at one second a run: 64 B sends over 1 to 1,024 QPs with and
// without a shared receive queue pass, the shared queue registers less
// at 1,024 QPs than a receive queue per QP, and the HTML draws both
// sweeps against QPs.
func TestQPScalingScenario(t *testing.T) {
	sc, err := Load("../scenarios/qp-scaling.yaml", map[string]string{"sweep_duration": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := executeLogged(t, sc, vmLoopback(t), "scenarios/qp-scaling.yaml", report.Compact)
	checkAllPassed(t, sc, rep)
	registered := map[string]int64{} // case at 1,024 QPs: both sides' bytes
	for _, r := range rep.Runs {
		if r.Result == nil || r.Spec.QPs != 1024 {
			continue
		}
		for _, s := range r.Result.Sides {
			registered[r.Case] += s.RegisteredBytes
		}
	}
	per, shared := registered["send-64B-qps"], registered["send-64B-qps-srq"]
	t.Logf("registered at 1,024 QPs: %d B with a receive queue per QP, %d B with a shared one", per, shared)
	if per == 0 || shared == 0 || shared >= per {
		t.Errorf("registered at 1,024 QPs: %d B per QP's queue, %d B shared; want both reported and the shared one smaller", per, shared)
	}
	var html bytes.Buffer
	if err := report.HTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section class="scaling">`, `>send-64B-qps 64B busy_poll</text>`, `>send-64B-qps-srq 64B busy_poll</text>`, `>1024</text>`} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}
}
