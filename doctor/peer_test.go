package doctor

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestPeerMTU(t *testing.T) {
	roce := func(netdev, active int) PortMTU {
		return PortMTU{Device: "mlx5_0", Port: 1, Netdev: "eth0", NetdevMTU: netdev, ActiveMTU: active}
	}
	for _, tc := range []struct {
		name        string
		local, far  PortMTU
		want        Status
		found, cost string
	}{
		{"equal", roce(9000, 4096), roce(9000, 4096), OK, "this end active MTU 4096, eth0 MTU 9000, far's mlx5_0/1 active MTU 4096, eth0 MTU 9000", ""},
		{"netdev 1500 against 9000", roce(1500, 1024), roce(9000, 4096), Fail, "", "frames larger than 1500 B leave the end with MTU 9000 and are dropped"},
		{"netdev equal, port lower", roce(9000, 1024), roce(9000, 4096), Fail, "", "runs at 1024-byte packets, not 4096"},
		{"only the ports known", PortMTU{Device: "mlx5_0", Port: 1, ActiveMTU: 4096}, PortMTU{Device: "mlx5_1", Port: 1, ActiveMTU: 4096}, OK, "this end active MTU 4096, far's mlx5_1/1 active MTU 4096", ""},
		{"nothing known on the far end", roce(9000, 4096), PortMTU{Device: "rxe0", Port: 1}, CannotTell, "neither layer's MTU is known on both ends", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := PeerMTU(tc.local, tc.far, "far")
			if c.Status != tc.want || c.Name != "mtu.peer" || c.Device != tc.local.Device || c.Port != tc.local.Port {
				t.Errorf("%+v, want status %s on %s/%d", c, tc.want, tc.local.Device, tc.local.Port)
			}
			if !strings.Contains(c.Found, tc.found) || !strings.Contains(c.Cost, tc.cost) {
				t.Errorf("found %q, cost %q; want them to contain %q, %q", c.Found, c.Cost, tc.found, tc.cost)
			}
			if c.Status == Fail && c.Fix == "" {
				t.Error("a failed check without a fix")
			}
		})
	}
}

// The broken host (netdev MTU 1500) against the mlx5 one (9000) fails
// mtu.peer; no other check changes.
func TestSetPeerMTU(t *testing.T) {
	broken, err := EnvAt("testdata/broken")
	if err != nil {
		t.Fatal(err)
	}
	good, err := EnvAt("testdata/mlx5-roce")
	if err != nil {
		t.Fatal(err)
	}
	r := Run(broken)
	before := append([]Check(nil), r.Checks...)
	r.SetPeerMTU(MTUs(broken), MTUs(good)[0], "good")
	changed := 0
	for i, c := range r.Checks {
		if reflect.DeepEqual(c, before[i]) {
			continue
		}
		changed++
		if c.Name != "mtu.peer" || c.Status != Fail || !strings.Contains(c.Found, "ens1f0np0 MTU 1500") || !strings.Contains(c.Found, "MTU 9000") {
			t.Errorf("changed check: %+v", c)
		}
	}
	if changed != 1 {
		t.Errorf("%d checks changed, want mtu.peer alone", changed)
	}
}

// A report read back from its JSON is the report: statuses included, a
// newer build's unknown status as cannot_tell.
func TestReportRoundTrip(t *testing.T) {
	for _, name := range []string{"broken", "mlx5-roce", "mlx5-ib", "bnxt-roce"} {
		b, err := os.ReadFile("testdata/" + name + ".golden.json")
		if err != nil {
			t.Fatal(err)
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, _ := json.MarshalIndent(r, "", "  ")
		if strings.TrimSpace(string(again)) != strings.TrimSpace(string(b)) {
			t.Errorf("%s: the round trip changed the report:\n%s", name, again)
		}
	}
	var c Check
	if err := json.Unmarshal([]byte(`{"check":"a.b","status":"newer"}`), &c); err != nil || c.Status != CannotTell {
		t.Errorf("an unknown status reads as %v, %v; want cannot_tell", c.Status, err)
	}
}
