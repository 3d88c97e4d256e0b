package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rdmarun/rdmarun/peer"
)

func TestNaturalCompare(t *testing.T) {
	names := []string{"mlx5_10", "mlx5_2", "mlx5_1", "ib1", "mlx5_02", "mlx4_0", "mlx5_", "mlx5_99999999999999999999", "mlx5_100000000000000000000"}
	slices.SortFunc(names, naturalCompare)
	want := "ib1 mlx4_0 mlx5_ mlx5_1 mlx5_2 mlx5_02 mlx5_10 mlx5_99999999999999999999 mlx5_100000000000000000000"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("sorted %s\nwant %s", got, want)
	}
	if naturalCompare("mlx5_2", "mlx5_2") != 0 || naturalCompare("mlx5_2", "mlx5_02") == 0 {
		t.Error("only equal names compare equal")
	}
}

// TestParseFleetAutoDevices: devices: auto is the fleet's; a host that
// lists its own keeps them; the pairs wait for the hosts' answers, and
// auto as one host's device is refused.
func TestParseFleetAutoDevices(t *testing.T) {
	sc, err := Parse("f.yaml", []byte("hosts: [a, b, {name: c, devices: [x, y]}]\ndevices: auto\npattern: rail\n"+fleetCase), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := sc.Fleet
	if !f.AutoDevices || len(f.Hosts) != 3 || f.Pairs != nil || f.Rounds != nil || strings.Join(f.Hosts[2].Devices, ",") != "x,y" || len(f.Hosts[0].Devices) != 0 {
		t.Errorf("fleet %+v: want auto, 3 hosts, c's own devices and no plan yet", f)
	}
	checkRounds(t, f)
	// Every host listing its own: nothing to ask, planned at once.
	sc, err = Parse("f.yaml", []byte("hosts: [{name: a, devices: [x]}, {name: b, devices: [x]}]\ndevices: auto\npattern: rail\n"+fleetCase), nil)
	if err != nil || len(sc.Fleet.Rounds) != 1 {
		t.Errorf("auto over hosts that list their devices: %v, %d rounds", err, len(sc.Fleet.Rounds))
	}
	for doc, want := range map[string]string{
		"hosts: [a, {name: b, devices: [auto]}]\n": "f.yaml:1:32: devices: auto asks every host's responder for its devices and applies to the whole fleet",
		"hosts: [a, b]\ndevices: [x, auto]\n":      "f.yaml:2:14: devices: auto asks every host's responder",
		"devices: auto\n":                          "f.yaml:1:1: devices: applies to a fleet scenario only",
	} {
		if _, err := Parse("f.yaml", []byte(doc+fleetCase), nil); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}

// fakeDevices answers device listings from a table, by dial address.
type fakeDevices struct {
	mu    sync.Mutex
	asked []string
	token string
	hosts map[string][]peer.FarDevice
	down  map[string]bool
}

func (f *fakeDevices) ask(_ context.Context, cfg peer.ClientConfig) (*peer.FarDevices, error) {
	f.mu.Lock()
	f.asked = append(f.asked, cfg.Addr)
	f.token = cfg.Token
	f.mu.Unlock()
	if f.down[cfg.Addr] {
		return nil, &peer.Error{Addr: cfg.Addr, Stage: peer.StageConnecting, Err: errors.New("connection refused")}
	}
	return &peer.FarDevices{Addr: cfg.Addr, Port: 1, Devices: f.hosts[cfg.Addr]}, nil
}

func active(names ...string) []peer.FarDevice {
	var out []peer.FarDevice
	for _, n := range names {
		out = append(out, peer.FarDevice{Name: n, State: "ACTIVE"})
	}
	return out
}

// TestResolveDevices: each host that lists none gets its ACTIVE devices
// in natural order, then the rail plan is made and runs; the hosts are
// asked with the fleet's token, once each.
func TestResolveDevices(t *testing.T) {
	sc, err := Parse("f.yaml", []byte("hosts: [a, b, {name: c, devices: [p, q]}]\ndevices: auto\npattern: rail\n"+fleetCase), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ExecuteFleet(context.Background(), sc, Relay{Via: &fakeRelay{}}, Options{}); err == nil || !strings.Contains(err.Error(), "call ResolveDevices first") {
		t.Errorf("ExecuteFleet before the devices are known: %v", err)
	}
	f := &fakeDevices{hosts: map[string][]peer.FarDevice{
		"a:18520": append(active("mlx5_10", "mlx5_2"), peer.FarDevice{Name: "mlx5_1", State: "DOWN"}),
		"b:18520": active("mlx5_2", "mlx5_10"),
	}}
	if err := ResolveDevices(context.Background(), sc, Relay{Token: "fleet", Devices: f.ask}); err != nil {
		t.Fatal(err)
	}
	fl := sc.Fleet
	got := describeDevices(fl.Hosts)
	if want := "a: mlx5_2, mlx5_10; b: mlx5_2, mlx5_10; c: p, q"; got != want {
		t.Errorf("devices %s, want %s", got, want)
	}
	slices.Sort(f.asked)
	if strings.Join(f.asked, " ") != "a:18520 b:18520" || f.token != "fleet" {
		t.Errorf("asked %v with token %q; want a and b once each, with the fleet's token", f.asked, f.token)
	}
	// Rail: 2 rails, 3 pairs each, rail 0 on the first device of each.
	if len(fl.Pairs) != 6 || len(fl.Rounds) == 0 {
		t.Fatalf("%d pairs in %d rounds, want 6", len(fl.Pairs), len(fl.Rounds))
	}
	checkRounds(t, fl)
	var rail0 []string
	for _, p := range fl.Pairs[:3] {
		rail0 = append(rail0, fmt.Sprintf("%d/%s->%d/%s", p.A.Host, p.A.Device, p.B.Host, p.B.Device))
	}
	if want := "0/mlx5_2->1/mlx5_2 0/mlx5_2->2/p 1/mlx5_2->2/p"; strings.Join(rail0, " ") != want {
		t.Errorf("rail 0: %s, want %s", strings.Join(rail0, " "), want)
	}
	// Resolving again asks no one.
	f.asked = nil
	if err := ResolveDevices(context.Background(), sc, Relay{Devices: f.ask}); err != nil || len(f.asked) != 0 {
		t.Errorf("a second resolve: %v, asked %v", err, f.asked)
	}
	rep, err := ExecuteFleet(context.Background(), sc, Relay{Via: &fakeRelay{hosts: fl.Hosts}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, r := range rep.Runs {
		ran = append(ran, r.Pair.A+"->"+r.Pair.B)
	}
	slices.Sort(ran)
	want := "a/mlx5_10->b/mlx5_10 a/mlx5_10->c/q a/mlx5_2->b/mlx5_2 a/mlx5_2->c/p b/mlx5_10->c/q b/mlx5_2->c/p"
	if rep.Summary.Passed != 6 || strings.Join(rep.Fleet.Hosts[0].Devices, ",") != "mlx5_2,mlx5_10" || strings.Join(ran, " ") != want {
		t.Errorf("summary %+v, hosts %+v, runs %s; want 6 passed, %s", rep.Summary, rep.Fleet.Hosts, ran, want)
	}
}

// TestResolveDevicesErrors: every host that cannot be asked or has no
// ACTIVE device is named at once; devices that cannot make the plan say
// what each host has.
func TestResolveDevicesErrors(t *testing.T) {
	load := func(pattern string) *Scenario {
		sc, err := Parse("f.yaml", []byte("hosts: [a, b, c]\ndevices: auto\npattern: "+pattern+"\n"+fleetCase), nil)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	f := &fakeDevices{down: map[string]bool{"a:18520": true}, hosts: map[string][]peer.FarDevice{
		"b:18520": {{Name: "mlx5_0", State: "DOWN"}, {Name: "mlx5_1"}},
		"c:18520": active("mlx5_0"),
	}}
	sc := load("rail")
	err := ResolveDevices(context.Background(), sc, Relay{Devices: f.ask})
	for _, want := range []string{"devices: auto: a: ", "connection refused", "b: no device has port 1 ACTIVE (mlx5_0 DOWN, mlx5_1 no port 1); bring a link up, or list the host's devices"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "c: ") {
		t.Errorf("error %v names c, which answered", err)
	}
	if sc.Fleet.Rounds != nil || len(sc.Fleet.Hosts[2].Devices) != 0 {
		t.Errorf("a failed resolve changed the fleet: %+v", sc.Fleet)
	}

	f = &fakeDevices{hosts: map[string][]peer.FarDevice{"a:18520": active("x", "y"), "b:18520": active("x"), "c:18520": active("x", "y")}}
	err = ResolveDevices(context.Background(), load("rail"), Relay{Devices: f.ask})
	if err == nil || !strings.Contains(err.Error(), "pattern rail needs the same number of devices on every host") || !strings.Contains(err.Error(), "(a: x, y; b: x; c: x, y)") {
		t.Errorf("unequal rails: %v", err)
	}
	// Other patterns test each host's first ACTIVE device.
	sc = load("ring")
	if err := ResolveDevices(context.Background(), sc, Relay{Devices: f.ask}); err != nil || len(sc.Fleet.Pairs) != 3 || sc.Fleet.Pairs[0].A.Device != "x" {
		t.Errorf("ring: %v, pairs %+v", err, sc.Fleet.Pairs)
	}

	if err := ResolveDevices(context.Background(), fleetScenario(t, 2, nil), Relay{Devices: func(context.Context, peer.ClientConfig) (*peer.FarDevices, error) {
		t.Error("a fleet without auto asked for devices")
		return nil, nil
	}}); err != nil {
		t.Error(err)
	}
}
