//go:build testbed

package runner

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/peer/peertest"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// A threshold that cannot hold, run against a responder on rxe0 from
// rxe1, fails; the report then carries the doctor's findings for both
// ends: soft-RoCE's warning on each, nothing that is ok.
func TestDoctorOnFailedThresholdVM(t *testing.T) {
	rep, addr, text := runOnRxe(t, "doctor", "p99 < 1ns")
	if rep.Summary.Failed != 1 || len(rep.Doctor) != 2 {
		t.Fatalf("summary %+v, %d doctor ends; want the run failed and both ends examined", rep.Summary, len(rep.Doctor))
	}
	for i, want := range []struct{ host, device string }{{"local", "rxe1"}, {addr, "rxe0"}} {
		e := rep.Doctor[i]
		if e.Host != want.host || strings.Join(e.Devices, ",") != want.device || e.Error != "" || e.OK == 0 || e.NotApplicable == 0 {
			t.Errorf("end %d: %+v, want %s's %s with its ok and not-applicable checks counted", i, e, want.host, want.device)
		}
		kind := false
		for _, c := range e.Findings {
			if c.Status < doctor.CannotTell {
				t.Errorf("%s: finding %s is %s", e.Host, c.Name, c.Status)
			}
			kind = kind || (c.Name == "device.kind" && c.Status == doctor.Warn)
		}
		if !kind {
			t.Errorf("%s: soft-RoCE's device.kind warning is not among the findings %+v", e.Host, e.Findings)
		}
	}
	if !strings.Contains(text, "doctor, as a threshold failed") {
		t.Error("the text report has no doctor section")
	}
}

// runOnRxe runs one 64 B write latency case with the pass conditions
// pass (a YAML flow list or one condition) from rxe1 against a responder
// on rxe0, logs the text report and returns the report, the responder's
// address and the text.
func runOnRxe(t *testing.T, name, pass string) (rep *report.Report, addr, text string) {
	t.Helper()
	addr = peertest.Serve(t, peer.ServerConfig{Device: "rxe0", GIDIndex: rdma.AutoGIDIndex}, nil)
	sc, err := Parse(name+".yaml", []byte(`
name: `+name+`
cases:
  - name: lat
    op: write
    measure: latency
    iterations: 100
    sizes: [64]
    pass: `+pass+`
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	target := &Remote{Addr: addr, Local: Endpoint{Device: "rxe1", Port: 1, GIDIndex: rdma.AutoGIDIndex}}
	rep, err = Execute(context.Background(), sc, target, Options{Tool: "rdmarun test"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.Text(&b, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	return rep, addr, b.String()
}
