//go:build chromium

// This test opens the HTML report in a real headless Chromium (make test
// runs it with -tags chromium; .ci/run installs Debian's chromium). It
// fails on a page error or a missing chart, and saves a screenshot.
package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/chromium"
)

// renderInChromium writes r's HTML page as name in a temporary directory,
// has Chromium parse it, fails the test on any script error in its log,
// and returns the page's path and the DOM Chromium built.
func renderInChromium(t *testing.T, r *Report, name string) (page, dom string) {
	t.Helper()
	page = filepath.Join(t.TempDir(), name)
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return page, chromium.DOM(t, page)
}

func TestHTMLInChromium(t *testing.T) {
	page, dom := renderInChromium(t, fixture(), "report.html")
	// Latency for cases write-latency and write-cm, bandwidth for write-bw.
	if n := strings.Count(dom, `class="chart"`); n != 3 {
		t.Errorf("the rendered page has %d charts, want 3", n)
	}
	if !strings.Contains(dom, "Connection set-up through rdma_cm") {
		t.Error("the rendered page lacks the CM set-up table")
	}
	if n := strings.Count(dom, "<polyline"); n < 4 {
		t.Errorf("the rendered page has %d plotted lines, want at least 4", n)
	}
	chromium.Screenshot(t, page, "rdmarun-report-screenshot.png", "REPORT_SCREENSHOT", "1280,1800", 10000)
}

// TestFleetHTMLInChromium renders a fleet report: the heat maps must come
// through the browser's parser whole, a cell per host pair and metric
// with its status, beside the suspects table and the runs' tables.
func TestFleetHTMLInChromium(t *testing.T) {
	page, dom := renderInChromium(t, fleetFixture(t), "fleet.html")
	if n := strings.Count(dom, `<svg class="heatmap"`); n != 3 {
		t.Errorf("the rendered page has %d heat maps, want 3", n)
	}
	// 3 metrics x 4 x 4 host pairs; the statuses as fleetFixture makes them.
	if n := strings.Count(dom, `<g class="cell `); n != 48 {
		t.Errorf("the rendered page has %d heat map cells, want 48", n)
	}
	for status, want := range map[string]int{"lag": 6, "fail": 2, "env": 3} {
		if n := strings.Count(dom, `<g class="cell `+status+`"`); n != want {
			t.Errorf("the rendered page has %d %s cells, want %d", n, status, want)
		}
	}
	if n := strings.Count(dom, "<tr><td>"); n < 2+12 {
		t.Errorf("the rendered page has %d table rows, want the 2 suspects and the 12 runs", n)
	}
	if !strings.Contains(dom, `<table class="suspects">`) || !strings.Contains(dom, "node1 &lt;-&gt; node2") {
		t.Error("the rendered page lacks the suspects table or its link suspect")
	}
	if n := strings.Count(dom, `class="chart"`); n != 0 {
		t.Errorf("the rendered fleet page has %d charts against message size, want none", n)
	}
	chromium.Screenshot(t, page, "rdmarun-fleet-screenshot.png", "FLEET_SCREENSHOT", "1400,1800", 20000)
}

// TestFleetVMHTMLInChromium opens the HTML that the 4-host testbed's
// all-pairs run wrote (make testbed-test exports it; FLEET_VM_OUTPUT
// names its folder): a heat map per metric of the run's JSON, a cell per
// host pair, no page error.
func TestFleetVMHTMLInChromium(t *testing.T) {
	dir := os.Getenv("FLEET_VM_OUTPUT")
	if dir == "" {
		t.Skip("FLEET_VM_OUTPUT is not set; make fleet-html-test sets it after the testbed's fleet run")
	}
	b, err := os.ReadFile(filepath.Join(dir, "fleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil || r.Fleet == nil || len(r.Fleet.Matrices) == 0 {
		t.Fatalf("%s/fleet.json: %v; want a fleet report with matrices", dir, err)
	}
	page := filepath.Join(dir, "fleet.html")
	dom := chromium.DOM(t, page)
	hosts := len(r.Fleet.Hosts)
	if n, want := strings.Count(dom, `<svg class="heatmap"`), len(r.Fleet.Matrices); n != want {
		t.Errorf("the rendered page has %d heat maps, want %d (one per metric)", n, want)
	}
	if n, want := strings.Count(dom, `<g class="cell `), len(r.Fleet.Matrices)*hosts*hosts; n != want {
		t.Errorf("the rendered page has %d heat map cells, want %d (%d hosts squared per metric)", n, want, hosts)
	}
	chromium.Screenshot(t, page, "rdmarun-fleet-vm-screenshot.png", "FLEET_VM_SCREENSHOT", "1400,1800", 20000)
}
