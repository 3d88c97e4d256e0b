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
	"time"

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

// fitScript measures, in the browser, every text of every heat map
// against the box it must stay in: a cell's text inside its cell (and a
// value above its mark), any other text unrotated inside its map. It
// writes what sticks out into the page for the test to read.
const fitScript = `<script>
const out = [];
const inside = (b, r) => b.x >= r.x && b.y >= r.y && b.x + b.width <= r.x + r.width && b.y + b.height <= r.y + r.height;
for (const svg of document.querySelectorAll('svg.heatmap')) {
  const box = {x: 0, y: 0, width: svg.width.baseVal.value, height: svg.height.baseVal.value};
  for (const t of svg.querySelectorAll(':scope > text:not([transform])')) {
    if (!inside(t.getBBox(), box)) out.push('map text ' + t.textContent);
  }
  for (const g of svg.querySelectorAll('g.cell')) {
    const r = g.querySelector('rect').getBBox();
    const texts = [...g.querySelectorAll('text')];
    for (const t of texts) {
      if (!inside(t.getBBox(), r)) out.push('cell text ' + t.textContent + ' ' + JSON.stringify(t.getBBox()) + ' in ' + JSON.stringify(r));
    }
    if (texts.length === 2 && texts[0].getBBox().y + texts[0].getBBox().height > texts[1].getBBox().y) out.push('value over mark ' + texts[0].textContent);
  }
}
const p = document.createElement('pre');
p.id = 'fit';
p.textContent = 'measured ' + document.querySelectorAll('svg.heatmap g.cell text').length + ' texts; outside: ' + (out.length ? out.join('; ') : 'none');
document.body.appendChild(p);
</script>`

// TestFleetHeatMapFitsInChromium: Chromium's own text metrics keep every
// heat map text of wideValues, and of the fleet fixture, inside its box.
func TestFleetHeatMapFitsInChromium(t *testing.T) {
	wide, _, _ := wideValues(t)
	for name, r := range map[string]*Report{"wide.html": wide, "fleet.html": fleetFixture(t)} {
		page := filepath.Join(t.TempDir(), name)
		var b bytes.Buffer
		if err := HTML(&b, r); err != nil {
			t.Fatal(err)
		}
		html := strings.Replace(b.String(), "</body>", fitScript+"</body>", 1)
		if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		dom := chromium.DOM(t, page)
		i := strings.Index(dom, `<pre id="fit">`)
		if i < 0 {
			t.Fatalf("%s: the measuring script wrote nothing", name)
		}
		got := dom[i+len(`<pre id="fit">`):]
		got = got[:strings.Index(got, "</pre>")]
		if !strings.HasSuffix(got, "outside: none") || strings.HasPrefix(got, "measured 0 ") {
			t.Errorf("%s: %s", name, got)
		}
		t.Logf("%s: %s", name, got)
	}
	page := filepath.Join(t.TempDir(), "wide-shot.html")
	var b bytes.Buffer
	if err := HTML(&b, wide); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	chromium.Screenshot(t, page, "rdmarun-fleet-wide-screenshot.png", "FLEET_WIDE_SCREENSHOT", "1400,1200", 20000)
}

// TestLargeFleetHTMLInChromium: a 1,000-host report's main page and its
// largest group page each come through Chromium's parser whole within
// 10 s, no page error: a group-by-group heat map per metric on the main
// page, every pair row on the group page.
func TestLargeFleetHTMLInChromium(t *testing.T) {
	r := syntheticReport(1000)
	files, err := WriteHTML(filepath.Join(t.TempDir(), "fleet.html"), r)
	if err != nil {
		t.Fatal(err)
	}
	largest, size := "", int64(0)
	for _, f := range files[1:] {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			largest, size = f, st.Size()
		}
	}
	groups := len(groupsOf(r.Fleet))
	for _, tc := range []struct {
		page  string
		count string
		want  int
	}{
		{files[0], `<g class="cell `, len(r.Fleet.Matrices) * groups * groups},
		// Both directions: each host has 999 rows; a page holds whole
		// initiators but for the one it splits, at htmlPageBudget.
		{largest, "<tr><td>node", -1},
	} {
		st, _ := os.Stat(tc.page)
		start := time.Now()
		dom := chromium.DOM(t, tc.page)
		took := time.Since(start)
		t.Logf("%s (%.2f MB): Chromium parsed it in %v", filepath.Base(tc.page), float64(st.Size())/1e6, took.Round(time.Millisecond))
		if took > 10*time.Second {
			t.Errorf("%s took %v to render, over 10 s", filepath.Base(tc.page), took)
		}
		if n := strings.Count(dom, tc.count); tc.want < 0 {
			if n < 999 || n != strings.Count(string(must(os.ReadFile(tc.page))), tc.count) {
				t.Errorf("%s: %d pair rows in the DOM, want the file's, at least one initiator's 999", filepath.Base(tc.page), n)
			}
		} else if n != tc.want {
			t.Errorf("%s: %d of %q in the DOM, want %d", filepath.Base(tc.page), n, tc.count, tc.want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
