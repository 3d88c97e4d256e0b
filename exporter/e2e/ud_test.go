//go:build testbed

package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestExporterUD: a module with qp: {type: ud} probes a responder over UD.
// On the healthy link every probe succeeds and nothing is lost; with
// testbed/fault.sh dropping 30% of a's packets to b, the probes go on
// succeeding and the loss is a metric: lost round trips counted, not
// failed probes.
func TestExporterUD(t *testing.T) {
	dir := t.TempDir()
	writeToken(t, dir)
	responder := fmt.Sprintf("%s:%d", addrB, 18730)
	b := runExporter(t, dir, "b-ud", freePort(t, "127.0.0.1"), fmt.Sprintf(`responder:
  listen: "%s"
  cm_port: -1
  device: rxe1
  token_file: token
`, responder))
	dirA := t.TempDir()
	writeToken(t, dirA)
	a := runExporter(t, dirA, "a-ud", freePort(t, "127.0.0.1"), fmt.Sprintf(`modules:
  ud: {op: send, qp: {type: ud}, count: 10, interval: 3s, timeout: 2500ms}
targets:
  static:
    - {name: b, address: "%s", module: ud, device: rxe0}
responder:
  listen: "%s:18731"
  cm_port: -1
  device: rxe0
  token_file: token
`, responder, addrA))
	l := labels{"target": "b"}
	var s scrape
	waitFor(t, 30*time.Second, "UD probes succeeding, their round trips counted", func() (bool, string) {
		s = a.scrape(t)
		ok, why := healthy(s, "b", 40, 1)
		sent := s.sum("rdma_probe_ud_sent_total", l)
		return ok && sent >= 40, fmt.Sprintf("%s; %v round trips sent", why, sent)
	})
	if lost := s.sum("rdma_probe_ud_lost_total", l); lost != 0 {
		t.Errorf("%v round trips lost on a healthy link, want 0", lost)
	}
	if f := failures(s, "b"); f != 0 {
		t.Errorf("%v failed UD probes on a healthy link, want 0", f)
	}
	if err := meshFault("path-loss", "0", "1", "30"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := meshFault("clear"); err != nil {
			t.Error(err)
		}
	})
	before := s.sum("rdma_probe_ud_sent_total", l)
	took := waitFor(t, 60*time.Second, "lost round trips counted on a 30% lossy path", func() (bool, string) {
		s = a.scrape(t)
		lost, sent := s.sum("rdma_probe_ud_lost_total", l), s.sum("rdma_probe_ud_sent_total", l)
		return lost > 0 && sent-before >= 60, fmt.Sprintf("%v of %v round trips lost", lost, sent)
	})
	lost, sent := s.sum("rdma_probe_ud_lost_total", l), s.sum("rdma_probe_ud_sent_total", l)
	t.Logf("30%% loss a -> b: %v of %v round trips since the fault lost (%.0f%%), counted %v after it began",
		lost, sent-before, 100*lost/(sent-before), took.Round(time.Millisecond))
	if f := failures(s, "b"); f != 0 {
		t.Errorf("%v failed UD probes on a lossy path, want 0: a loss is a count, not a failure", f)
	}
	for _, e := range []*exporter{a, b} {
		if err := e.stop(); err != nil {
			t.Errorf("exporter %s: %v", e.name, err)
		}
	}
}
