package main

import (
	"bytes"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/peer/peertest"
)

// serveSavedHost runs a responder that answers doctor requests from a
// saved host's files.
func serveSavedHost(t *testing.T, fixture string) string {
	t.Helper()
	env, err := doctor.EnvAt(filepath.Join("..", "..", "doctor", "testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	return peertest.Serve(t, peer.ServerConfig{DoctorEnv: func() doctor.Env { return env }}, nil)
}

// TestDoctorPeer: mtu.peer compares this host's MTUs with the far
// end's, the far end's checks are printed under its name, and the exit
// code counts both ends' failures.
func TestDoctorPeer(t *testing.T) {
	fixtures := filepath.Join("..", "..", "doctor", "testdata")
	good, broken := serveSavedHost(t, "mlx5-roce"), serveSavedHost(t, "broken")

	var stdout, stderr bytes.Buffer
	if code := run([]string{"doctor", "--root", filepath.Join(fixtures, "mlx5-roce"), "--peer", good}, &stdout, &stderr); code != exitOK {
		t.Fatalf("against a host like it: exit %d, want 0; stderr:\n%s\n%s", code, stderr.String(), stdout.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "== far end "+good+" (mlx5_0)") || strings.Count(out, "mtu.peer") != 2 {
		t.Errorf("the text lacks the far end's section or a mtu.peer per end:\n%s", out)
	}
	if !strings.Contains(out, "this end active MTU 4096, ens1f0np0 MTU 9000, "+good+"'s mlx5_0/1 active MTU 4096, ens1f0np0 MTU 9000") {
		t.Errorf("mtu.peer does not show both ends' MTUs:\n%s", out)
	}

	stdout.Reset()
	stderr.Reset()
	code := run([]string{"doctor", "--json", "--root", filepath.Join(fixtures, "mlx5-roce"), "--peer", broken}, &stdout, &stderr)
	if code != exitFailed {
		t.Fatalf("against the broken host: exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	var both struct {
		Local struct {
			Checks []doctor.Check `json:"checks"`
		} `json:"local"`
		Peer struct {
			Host   string `json:"host"`
			Report struct {
				Schema string         `json:"schema"`
				Checks []doctor.Check `json:"checks"`
			} `json:"report"`
		} `json:"peer"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &both); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, c := range both.Local.Checks {
		if c.Status == doctor.Fail {
			failed = append(failed, c.Name)
		}
	}
	if strings.Join(failed, ",") != "mtu.peer" {
		t.Errorf("this host's failed checks against 1500 on the far end: %q, want mtu.peer alone", failed)
	}
	if both.Peer.Host != broken || both.Peer.Report.Schema != doctor.Schema || len(both.Peer.Report.Checks) == 0 {
		t.Errorf("the far end's part: host %q, schema %q, %d checks", both.Peer.Host, both.Peer.Report.Schema, len(both.Peer.Report.Checks))
	}
	if e := stderr.String(); !strings.HasPrefix(e, "rdmarun: failed checks: mtu.peer; failed checks on "+broken+": ") || !strings.Contains(e, "mtu.netdev") {
		t.Errorf("stderr %q, want this host's failure, then the far end's", e)
	}

	// Nobody listening: the environment's failure, exit 4.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"doctor", "--root", filepath.Join(fixtures, "mlx5-roce"), "--peer", gone}, &stdout, &stderr); code != exitEnvironment {
		t.Errorf("an unreachable peer: exit %d, want %d; stderr:\n%s", code, exitEnvironment, stderr.String())
	}
}
