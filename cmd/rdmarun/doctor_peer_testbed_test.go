//go:build testbed

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/internal/netfault"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/peer/peertest"
)

// TestDoctorVMPeer: `rdmarun doctor --peer` on rxe0 against a
// responder on rxe1 (this VM's other end) passes mtu.peer while both
// netdevs carry 1500 bytes, and fails it, exiting 1, once veth0 carries
// 1000: rxe0 then sends 512-byte packets and drops the far end's larger
// frames.
func TestDoctorVMPeer(t *testing.T) {
	addr := peertest.Serve(t, peer.ServerConfig{Device: "rxe1"}, nil)

	doctorPeer := func() (int, doctor.Check, []string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run([]string{"doctor", "--json", "--device", "rxe0", "--peer", addr}, &stdout, &stderr)
		var both struct {
			Local struct {
				Checks []doctor.Check `json:"checks"`
			} `json:"local"`
			Peer struct {
				Report struct {
					Devices []string `json:"devices"`
				} `json:"report"`
			} `json:"peer"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &both); err != nil {
			t.Fatalf("%v; stderr:\n%s", err, stderr.String())
		}
		var mtu doctor.Check
		var failed []string
		for _, c := range both.Local.Checks {
			if c.Name == "mtu.peer" {
				mtu = c
			}
			if c.Status == doctor.Fail {
				failed = append(failed, c.Name)
			}
		}
		if strings.Join(both.Peer.Report.Devices, ",") != "rxe1" {
			t.Errorf("the far end checked %q, want rxe1 (its --device)", both.Peer.Report.Devices)
		}
		return code, mtu, failed, stderr.String()
	}

	code, mtu, failed, stderr := doctorPeer()
	if code != exitOK || mtu.Status != doctor.OK || len(failed) != 0 {
		t.Errorf("both netdevs at 1500: exit %d, mtu.peer %+v, failed %q; stderr:\n%s", code, mtu, failed, stderr)
	}
	if !strings.Contains(mtu.Found, "this end active MTU 1024, veth0 MTU 1500, "+addr+"'s rxe1/1 active MTU 1024, veth1 MTU 1500") {
		t.Errorf("mtu.peer at 1500 on both ends found %q", mtu.Found)
	}

	netfault.IP(t, "link", "set", "veth0", "mtu", "1000")
	t.Cleanup(func() { netfault.IP(t, "link", "set", "veth0", "mtu", "1500") })
	code, mtu, failed, stderr = doctorPeer()
	if code != exitFailed || mtu.Status != doctor.Fail || strings.Join(failed, ",") != "mtu.peer" {
		t.Errorf("veth0 at 1000: exit %d, mtu.peer %+v, failed %q; want exit 1 and mtu.peer alone failed; stderr:\n%s", code, mtu, failed, stderr)
	}
	if !strings.Contains(mtu.Found, "this end active MTU 512, veth0 MTU 1000") {
		t.Errorf("mtu.peer at veth0 MTU 1000 found %q", mtu.Found)
	}
}

// TestDoctorVMPeerCM: cm.peer resolves the far device's address through
// the real CM: from rxe0 to a responder on rxe1 over RoCE (bound to rxe0,
// reaching rxe1's GID), and from siw0 to one on siw1 over iWARP (the
// testbed needs TESTBED_SIW=1, as make testbed-test gives the doctor's VM).
func TestDoctorVMPeerCM(t *testing.T) {
	cases := []struct{ local, remote, found string }{
		{"rxe0", "rxe1", "(10.0.0.2) from 10.0.0.1: bound to rxe0 port 1, sgid ::ffff:10.0.0.1, dgid ::ffff:10.0.0.2"},
		{"siw0", "siw1", "(10.0.1.2) from 10.0.1.1: bound to siw0 port 1, iWARP, by IP address"},
	}
	for _, c := range cases {
		t.Run(c.local, func(t *testing.T) {
			if strings.HasPrefix(c.local, "siw") && os.Getenv("TESTBED_SIW") != "1" {
				t.Fatal("TESTBED_SIW is not 1; make testbed-test runs the doctor's VM tests with soft-iWARP")
			}
			addr := peertest.Serve(t, peer.ServerConfig{Device: c.remote}, nil)
			var stdout, stderr bytes.Buffer
			code := run([]string{"doctor", "--json", "--device", c.local, "--peer", addr}, &stdout, &stderr)
			var both struct {
				Local struct {
					Checks []doctor.Check `json:"checks"`
				} `json:"local"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &both); err != nil {
				t.Fatalf("%v; stderr:\n%s", err, stderr.String())
			}
			var cm []doctor.Check
			for _, ch := range both.Local.Checks {
				if ch.Name == "cm.peer" {
					cm = append(cm, ch)
				}
			}
			if len(cm) != 1 || cm[0].Status != doctor.OK || cm[0].Device != c.local || !strings.Contains(cm[0].Found, c.found) {
				t.Fatalf("exit %d, cm.peer %+v; want one, ok, finding %q; stderr:\n%s", code, cm, c.found, stderr.String())
			}
			t.Logf("%s: %s", c.local, cm[0].Found)
		})
	}
}
