//go:build testbed

package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestExporterCM: a module with connect: rdma_cm probes a responder
// through the CM, over rxe and, when the testbed runs soft-iWARP
// (TESTBED_SIW=1, as make testbed-test runs these tests), over siw, whose
// QPs connect no other way. Every probe succeeds and the slowest QP's CM
// set-up of the connection is a metric. The control channel crosses the
// RoCE network in both cases; the QPs, the device's own (siw1 has
// 10.0.1.2). The prober's own responder (its token is the probes') does
// not listen for the CM.
func TestExporterCM(t *testing.T) {
	cases := []struct {
		name, local, remote, op string
		control, cmPort         int
	}{
		// write_imm is the default op; RDMAP has no immediate data, so
		// siw probes with send.
		{name: "rxe", local: "rxe0", remote: "rxe1", op: "write_imm", control: 18720, cmPort: 18721},
		{name: "siw", local: "siw0", remote: "siw1", op: "send", control: 18722, cmPort: 18723},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "siw" && os.Getenv("TESTBED_SIW") != "1" {
				t.Fatal("TESTBED_SIW is not 1; make testbed-test runs the exporter's VM tests with soft-iWARP")
			}
			dir := t.TempDir()
			writeToken(t, dir)
			responder := fmt.Sprintf("%s:%d", addrB, c.control)
			b := runExporter(t, dir, "b-"+c.name, freePort(t, "127.0.0.1"), fmt.Sprintf(`responder:
  listen: "%s"
  cm_port: %d
  device: %s
  token_file: token
`, responder, c.cmPort, c.remote))
			dirA := t.TempDir()
			writeToken(t, dirA)
			a := runExporter(t, dirA, "a-"+c.name, freePort(t, "127.0.0.1"), fmt.Sprintf(`modules:
  cm: {op: %s, connect: rdma_cm, count: 20, interval: 2s, timeout: 1500ms}
targets:
  static:
    - {name: b, address: "%s", module: cm, device: %s}
responder:
  listen: "%s:%d"
  cm_port: -1
  device: %s
  token_file: token
`, c.op, responder, c.local, addrA, c.control, c.local))
			var s scrape
			took := waitFor(t, 30*time.Second, "probes through the CM succeeding, with their set-up time", func() (bool, string) {
				s = a.scrape(t)
				ok, why := healthy(s, "b", 40, 1)
				setup := s.sum("rdma_probe_cm_setup_seconds", labels{"target": "b"})
				return ok && setup > 0, fmt.Sprintf("%s; CM set-up %v s", why, setup)
			})
			setup := s.sum("rdma_probe_cm_setup_seconds", labels{"target": "b"})
			t.Logf("%s: probes through the CM healthy %v after start; CM set-up of the last connection %.3f ms", c.name, took.Round(time.Millisecond), setup*1e3)
			if f := failures(s, "b"); f != 0 {
				t.Errorf("%v failed probes through the CM on a healthy link, want 0", f)
			}
			for _, e := range []*exporter{a, b} {
				if err := e.stop(); err != nil {
					t.Errorf("exporter %s: %v", e.name, err)
				}
			}
		})
	}
}
