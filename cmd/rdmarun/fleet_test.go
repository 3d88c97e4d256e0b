package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/report"
)

// fleetOf is a two-case scenario over hosts, all-pairs, built as the
// loader builds one.
func fleetOf(t *testing.T, hosts ...string) *runner.Scenario {
	t.Helper()
	sc, err := runner.Parse("fleet.yaml", []byte(`
name: fleet
cases:
  - {name: lat, op: write, measure: latency, sizes: [64], iterations: 10}
  - {name: bw, op: write, measure: bandwidth, sizes: [4KiB], iterations: 10}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	fl := &runner.Fleet{Source: runner.HostSource{Kind: runner.HostsList}, Pattern: fleet.AllPairs}
	for _, h := range hosts {
		fl.Hosts = append(fl.Hosts, fleet.Host{Name: h, Addr: h})
	}
	if fl.Pairs, err = fl.Pattern.Pairs(fl.Hosts, fl.Options); err != nil {
		t.Fatal(err)
	}
	if fl.Rounds, err = fl.Pattern.Rounds(fl.Pairs, 0); err != nil {
		t.Fatal(err)
	}
	sc.Fleet = fl
	return sc
}

// TestFleetRefusesOnePairFlags: the flags that place one pair's ends are
// an error with a fleet, naming them and what to do instead.
func TestFleetRefusesOnePairFlags(t *testing.T) {
	for _, tc := range []struct {
		at   where
		want string
	}{
		{where{peer: "h:1"}, "--peer cannot"},
		{where{device: "mlx5_0", peerDevice: "mlx5_1"}, "--device, --peer-device cannot"},
		{where{port: 2}, "--port cannot"},
	} {
		sc := fleetOf(t, "a", "b")
		var stdout, stderr bytes.Buffer
		err := execute(&stdout, &stderr, []*runner.Scenario{sc}, []string{"fleet.yaml"}, &tc.at, &outputs{text: report.TextOptions.Text})
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitInvalid || !strings.Contains(err.Error(), "fleet.yaml: "+tc.want+" be used with a fleet scenario (it names hosts:); list each host's devices") {
			t.Errorf("%+v: %v, want exit 3 naming %q", tc.at, err, tc.want)
		}
	}
}

// TestFleetGIDIndexFlag: --gid-index applies to both ends of every pair.
func TestFleetGIDIndexFlag(t *testing.T) {
	sc := fleetOf(t, "a", "b")
	at := where{gidIndex: "3", tokenFile: writeToken(t)}
	relay, err := at.relay(sc, "fleet.yaml")
	if err != nil || sc.GIDIndex != 3 || relay.Token != "fleet-secret" {
		t.Errorf("relay %+v, gid %d: %v", relay, sc.GIDIndex, err)
	}
	at.gidIndex = "x"
	if _, err := at.relay(fleetOf(t, "a", "b"), "fleet.yaml"); err == nil {
		t.Error("--gid-index x accepted")
	}
}

func writeToken(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("fleet-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFleetNoHostAnswers runs a fleet whose serves are all down, end to
// end through the command: a progress line per pair run, exit 4 (no pair
// could run), and the JSON written with the fleet in it. Nothing here
// needs an RDMA device: the coordinator runs no RDMA.
func TestFleetNoHostAnswers(t *testing.T) {
	sc := fleetOf(t, "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")
	if sc.Runs()[0].Spec.Measure != rdma.MeasureLatency {
		t.Fatal("the scenario's first run is not the latency run")
	}
	dir := t.TempDir()
	out := &outputs{json: filepath.Join(dir, "out.json"), text: report.TextOptions.Text}
	var stdout, stderr bytes.Buffer
	err := execute(&stdout, &stderr, []*runner.Scenario{sc}, []string{"fleet.yaml"}, &where{}, out)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitEnvironment {
		t.Fatalf("%v, want exit 4\n%s", err, stderr.String())
	}
	// Three pairs, each asking once and then failing its second run
	// without asking.
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[5], "run 6/6: ") {
		t.Fatalf("progress:\n%s\nwant a line per pair run, 6 of 6", stderr.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "run ") || !strings.Contains(l, " -> 127.0.0.1:") || !strings.Contains(l, ": error (") ||
			!strings.Contains(l, ": lat 64B latency") && !strings.Contains(l, ": bw 4KiB bandwidth") {
			t.Errorf("progress line %q", l)
		}
	}
	b, err := os.ReadFile(out.json)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Fleet == nil || len(rep.Fleet.Rounds) != 3 || rep.Summary.Errors != 6 || rep.StopReason != report.StopEnvironment {
		t.Errorf("JSON: fleet %v, summary %+v, stop reason %q", rep.Fleet != nil, rep.Summary, rep.StopReason)
	}
	for _, r := range rep.Runs {
		if r.Pair == nil || !strings.HasPrefix(r.Error, "environment") {
			t.Errorf("run %+v: want a pair and an environment error", r)
		}
	}
}
