package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/peer"
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

// TestFleetWaitForResponders: --wait-for-responders holds a fleet run
// until every host's responder listens; one that never does ends the run
// at the limit with exit 4 naming it, before any pair runs.
func TestFleetWaitForResponders(t *testing.T) {
	late, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := late.Addr().String()
	late.Close()
	// The responder starts listening a little after the run began.
	started := make(chan net.Listener, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			started <- nil
			return
		}
		started <- ln
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	hosts := []string{up.Addr().String(), addr}
	var stdout, stderr bytes.Buffer
	at := &where{waitResponders: 10 * time.Second}
	err = execute(&stdout, &stderr, []*runner.Scenario{fleetOf(t, hosts...)}, []string{"fleet.yaml"}, at, &outputs{text: report.TextOptions.Text})
	if ln := <-started; ln != nil {
		defer ln.Close()
	} else {
		t.Skip("the late responder's port was taken meanwhile")
	}
	// The hosts accept and close, as no responder does: the pairs then
	// fail, but only after the wait let them run.
	log := stderr.String()
	if !strings.Contains(log, "waiting up to 10s for 1 of 2 responders: "+addr+"\n") || !strings.Contains(log, "all 2 responders answered after") || !strings.Contains(log, "run 1/2: ") {
		t.Errorf("%v; log:\n%s\nwant the wait for the late host, then the runs", err, log)
	}

	// A host that never listens: exit 4, no pair run.
	stderr.Reset()
	err = execute(&stdout, &stderr, []*runner.Scenario{fleetOf(t, up.Addr().String(), "127.0.0.1:1")}, []string{"fleet.yaml"}, &where{waitResponders: 300 * time.Millisecond}, &outputs{text: report.TextOptions.Text})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitEnvironment || !strings.Contains(err.Error(), "fleet.yaml: --wait-for-responders: 1 of 2 responders did not answer within 300ms: 127.0.0.1:1 (127.0.0.1:1: ") {
		t.Errorf("%v, want exit 4 naming the silent host", err)
	}
	if strings.Contains(stderr.String(), "run 1/") {
		t.Errorf("a pair ran after the wait failed:\n%s", stderr.String())
	}
}

// TestFleetAutoDevices: with devices: auto the run asks each host's
// responder for its devices, logs them, and plans the rail over them; a
// responder that does not answer ends the run with exit 4 naming it.
func TestFleetAutoDevices(t *testing.T) {
	devs := func() ([]rdma.Device, error) {
		return []rdma.Device{
			{Name: "mlx5_1", Ports: []rdma.Port{{Num: 1, State: "ACTIVE"}}},
			{Name: "mlx5_0", Ports: []rdma.Port{{Num: 1, State: "ACTIVE"}}},
			{Name: "mlx5_9", Ports: []rdma.Port{{Num: 1, State: "DOWN"}}},
		}, nil
	}
	var addrs []string
	for range 2 {
		srv, err := peer.NewServer(peer.ServerConfig{Token: "fleet-secret", Device: "none", Devices: devs})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
		addrs = append(addrs, ln.Addr().String())
	}
	auto := func(hosts ...string) *runner.Scenario {
		sc := fleetOf(t, hosts...)
		sc.Fleet.Pattern, sc.Fleet.AutoDevices, sc.Fleet.Pairs, sc.Fleet.Rounds = fleet.Rail, true, nil, nil
		return sc
	}
	at := &where{tokenFile: writeToken(t)}
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	out := &outputs{json: filepath.Join(dir, "out.json"), text: report.TextOptions.Text}
	_ = execute(&stdout, &stderr, []*runner.Scenario{auto(addrs...)}, []string{"fleet.yaml"}, at, out)
	log := stderr.String()
	for _, want := range []string{"devices: auto: " + addrs[0] + ": mlx5_0, mlx5_1\n", "devices: auto: " + addrs[1] + ": mlx5_0, mlx5_1\n", "devices: auto: 2 pairs in "} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
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
	if rep.Fleet == nil || len(rep.Runs) != 4 || !strings.HasSuffix(rep.Runs[0].Pair.A, "/mlx5_0") || strings.Join(rep.Fleet.Hosts[1].Devices, ",") != "mlx5_0,mlx5_1" {
		t.Errorf("report: %d runs, hosts %+v; want 2 rails x 2 cases over mlx5_0, mlx5_1", len(rep.Runs), rep.Fleet)
	}

	stderr.Reset()
	err = execute(&stdout, &stderr, []*runner.Scenario{auto(addrs[0], "127.0.0.1:1")}, []string{"fleet.yaml"}, at, &outputs{text: report.TextOptions.Text})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitEnvironment || !strings.Contains(err.Error(), "fleet.yaml: devices: auto: 127.0.0.1:1: ") {
		t.Errorf("%v, want exit 4 naming the host that did not answer", err)
	}
	if strings.Contains(stderr.String(), "run 1/") {
		t.Errorf("a pair ran without its devices:\n%s", stderr.String())
	}
}
