//go:build testbed

// Runs `rdmarun doctor` on the testbed VM's soft-RoCE devices, in
// process: the doctor reads the VM's own sysfs and asks verbs for the
// ports' MTUs, as on a real host.
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/netfault"
)

type doctorCheck struct {
	Name     string `json:"check"`
	Device   string `json:"device"`
	Status   string `json:"status"`
	Found    string `json:"found"`
	Expected string `json:"expected"`
}

func doctorVM(t *testing.T) (int, []string, map[string]doctorCheck) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run([]string{"doctor", "--json"}, &stdout, &stderr)
	var r struct {
		Devices []string      `json:"devices"`
		Checks  []doctorCheck `json:"checks"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	checks := map[string]doctorCheck{}
	for _, c := range r.Checks {
		checks[c.Device+" "+c.Name] = c
		if c.Status == "fail" {
			t.Logf("fail: %+v", c)
		}
	}
	return code, r.Devices, checks
}

// TestDoctorVM: on soft-RoCE every check that applies runs and passes,
// and those that need hardware say they do not apply. Lowering the
// netdev's MTU lowers the port's with it (rxe derives one from the
// other), so the doctor reports the smaller MTU, not a mismatch. With
// TESTBED_SIW=1 the soft-iWARP devices are judged as iWARP: their RoCE
// checks do not apply, and none of them warns or fails.
func TestDoctorVM(t *testing.T) {
	code, devs, checks := doctorVM(t)
	var rxe, siw []string
	for _, dev := range devs {
		switch {
		case strings.HasPrefix(dev, "rxe"):
			rxe = append(rxe, dev)
		case strings.HasPrefix(dev, "siw"):
			siw = append(siw, dev)
		}
	}
	wantSiw := 0
	if os.Getenv("TESTBED_SIW") == "1" {
		wantSiw = 2
	}
	if code != exitOK || len(rxe) != 2 || len(siw) != wantSiw || len(devs) != 2+wantSiw {
		t.Fatalf("exit %d, devices %q; want 0, rxe0 and rxe1, and %d siw devices", code, devs, wantSiw)
	}
	for _, dev := range siw {
		if c := checks[dev+" device.transport"]; c.Status != "ok" || !strings.HasPrefix(c.Found, "iWARP:") {
			t.Errorf("%s device.transport: %+v, want ok and iWARP", dev, c)
		}
		for _, name := range []string{"gid.roce_v2_ipv4", "mtu.netdev", "roce.ecn", "roce.pfc", "roce.trust", "roce.pause"} {
			if c := checks[dev+" "+name]; c.Status != "not_applicable" || !strings.HasPrefix(c.Found, "iWARP:") {
				t.Errorf("%s %s: %+v, want not_applicable for iWARP", dev, name, c)
			}
		}
		for _, name := range []string{"device.uverbs", "port.state", "port.phys_state", "mtu.active"} {
			if c := checks[dev+" "+name]; c.Status != "ok" {
				t.Errorf("%s %s: %+v, want ok", dev, name, c)
			}
		}
	}
	for _, dev := range rxe {
		if c := checks[dev+" device.kind"]; c.Status != "warn" || c.Found != "rdma_rxe on veth"+dev[3:] {
			t.Errorf("%s device.kind: %+v", dev, c)
		}
		for _, name := range []string{"pcie.speed", "pcie.width", "pcie.bandwidth", "pcie.max_read_request", "numa.node",
			"port.rate", "roce.ecn", "roce.pfc", "roce.trust", "roce.pause", "mtu.peer"} {
			if c := checks[dev+" "+name]; c.Status != "not_applicable" {
				t.Errorf("%s %s: %+v, want not_applicable", dev, name, c)
			}
		}
		for _, name := range []string{"device.uverbs", "port.state", "port.phys_state", "mtu.netdev", "gid.roce_v2_ipv4"} {
			if c := checks[dev+" "+name]; c.Status != "ok" {
				t.Errorf("%s %s: %+v, want ok", dev, name, c)
			}
		}
	}
	if c := checks["rxe0 mtu.active"]; c.Found != "1024" || c.Expected != "4096" {
		t.Errorf("rxe0 mtu.active at netdev MTU 1500: %+v", c)
	}

	netfault.IP(t, "link", "set", "veth0", "mtu", "1000")
	t.Cleanup(func() { netfault.IP(t, "link", "set", "veth0", "mtu", "1500") })
	code, _, checks = doctorVM(t)
	if code != exitOK {
		t.Errorf("exit %d at veth0 MTU 1000, want 0: the port follows the netdev", code)
	}
	if c := checks["rxe0 mtu.active"]; c.Status != "warn" || c.Found != "512" {
		t.Errorf("rxe0 mtu.active at netdev MTU 1000: %+v", c)
	}
	if c := checks["rxe0 mtu.netdev"]; c.Status != "ok" || c.Found != "veth0 MTU 1000" {
		t.Errorf("rxe0 mtu.netdev at netdev MTU 1000: %+v", c)
	}
}
