//go:build testbed

package runner

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/runner/report"
)

// A short test from rxe1 to a responder on rxe0: both sides' categories
// reach the report, the responder's over the control channel. Soft-RoCE
// counts retransmits and sequence errors, so a condition on them is
// judged; its veth netdevs have no pause counters, so pause_rx == 0
// fails with both sides' reasons, naming the veth driver, rather than
// passing on a zero.
func TestCategoriesOnRxeVM(t *testing.T) {
	rep, _, text := runOnRxe(t, "categories", "[pause_rx == 0, retransmits >= 0 && seq_errors >= 0]")

	run := rep.Runs[0]
	if run.Status != report.Failed || run.Result == nil || len(run.Verdicts) != 2 {
		t.Fatalf("run %s (%s) with %d verdicts; want failed on pause_rx with a result", run.Status, run.Error, len(run.Verdicts))
	}
	if sides := run.Result.Sides; len(sides) != 2 {
		t.Fatalf("%d sides, want 2", len(sides))
	}
	for i, device := range []string{"rxe1", "rxe0"} {
		c := run.Result.Sides[i].Counters.Categories
		if c == nil {
			t.Fatalf("%s: no categories", device)
		}
		if c.Driver != "rdma_rxe" || !c.Reported(portstats.Retransmits) || !c.Reported(portstats.SeqErrors) {
			t.Errorf("%s: %+v; want rdma_rxe reporting retransmits and seq_errors", device, c)
		}
		for _, cat := range []string{portstats.PauseRx, portstats.PauseTx, portstats.PauseRxUs, portstats.PauseTxUs, portstats.CNPSent} {
			if !slices.Contains(c.Unreported, cat) {
				t.Errorf("%s: %s not in unreported %v", device, cat, c.Unreported)
			}
		}
	}

	pause := run.Verdicts[0]
	for _, want := range []string{
		"pause_rx: not reported by the requester (rxe1): no pause counters known for netdev veth1 (driver veth)",
		"; not reported by the responder (rxe0): no pause counters known for netdev veth0 (driver veth)",
	} {
		if pause.Passed || !strings.Contains(pause.Error, want) {
			t.Errorf("pause_rx == 0: passed %v, error %q; want it failed with %q", pause.Passed, pause.Error, want)
		}
	}
	if _, ok := pause.Values["pause_rx"]; ok {
		t.Errorf("pause_rx == 0 shows pause_rx=%v, a value nobody counted", pause.Values["pause_rx"])
	}
	if v := run.Verdicts[1]; !v.Passed || v.Error != "" {
		t.Errorf("%s: passed %v, error %q; soft-RoCE reports both", v.Expr, v.Passed, v.Error)
	}

	// Every category, zero or not, and what a driver lacks, are in the
	// verbose text; the default text has a side's line only when a count
	// moved.
	var verbose bytes.Buffer
	if err := (report.TextOptions{Verbose: true}).Text(&verbose, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"counters rxe1 (requester): retransmits ", "counters rxe0 (responder): retransmits ", "pause_*)"} {
		if !strings.Contains(verbose.String(), want) {
			t.Errorf("the verbose text report lacks %q", want)
		}
	}
	if strings.Contains(text, "pause_*)") {
		t.Errorf("the default text report lists what the drivers lack:\n%s", text)
	}
	var js bytes.Buffer
	if err := report.JSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := readSchema(t).Validate(inst); err != nil {
		t.Errorf("the JSON report does not match report/schema.json:\n%v", err)
	}
}
