//go:build chromium

// This test opens the HTML report in a real headless Chromium (make test
// runs it with -tags chromium; .ci/run installs Debian's chromium). It
// fails on a page error or a missing chart, and saves a screenshot.
package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func chromium(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, "chromium", append(base, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, e.String())
	}
	return o.String(), e.String()
}

func TestHTMLInChromium(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := HTML(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := chromium(t, "--dump-dom", "file://"+page)
	for _, bad := range []string{"Uncaught", "SyntaxError", "TypeError", "ReferenceError"} {
		if strings.Contains(logs, bad) {
			t.Errorf("page error (%s) in Chromium's log:\n%s", bad, logs)
		}
	}
	if n := strings.Count(dom, `class="chart"`); n != 2 {
		t.Errorf("the rendered page has %d charts, want 2", n)
	}
	if n := strings.Count(dom, "<polyline"); n < 4 {
		t.Errorf("the rendered page has %d plotted lines, want at least 4", n)
	}
	shot := filepath.Join(os.TempDir(), "rdmarun-report-screenshot.png")
	if out := os.Getenv("REPORT_SCREENSHOT"); out != "" {
		shot = out
	}
	chromium(t, "--screenshot="+shot, "--window-size=1280,1800", "file://"+page)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Fatalf("screenshot %s: %v (size %v)", shot, err, st)
	}
	t.Logf("screenshot saved to %s", shot)
}

// TestFleetHTMLInChromium renders a fleet report: the heat maps must come
// through the browser's parser whole, a cell per host pair and metric
// with its status, beside the suspects table and the runs' tables.
func TestFleetHTMLInChromium(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "fleet.html")
	var b bytes.Buffer
	if err := HTML(&b, fleetFixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := chromium(t, "--dump-dom", "file://"+page)
	for _, bad := range []string{"Uncaught", "SyntaxError", "TypeError", "ReferenceError"} {
		if strings.Contains(logs, bad) {
			t.Errorf("page error (%s) in Chromium's log:\n%s", bad, logs)
		}
	}
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
	shot := filepath.Join(os.TempDir(), "rdmarun-fleet-screenshot.png")
	if out := os.Getenv("FLEET_SCREENSHOT"); out != "" {
		shot = out
	}
	chromium(t, "--screenshot="+shot, "--window-size=1400,1800", "file://"+page)
	if st, err := os.Stat(shot); err != nil || st.Size() < 20000 {
		t.Fatalf("screenshot %s: %v (size %v)", shot, err, st)
	}
	t.Logf("screenshot saved to %s", shot)
}
