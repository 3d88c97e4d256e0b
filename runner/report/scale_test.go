package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/internal/junit"
)

// The large fleet's planted faults: a bad host, lagging with every
// partner, and a bad link, whose latency test fails.
const (
	largeBadHost           = 41    // node042
	largeLinkA, largeLinkB = 6, 62 // node007 -> node063
)

// The large fixture's metrics, as the coordinator names them.
var largeMetrics = []struct {
	name   string
	higher bool
	value  float64 // a good pair's value, seconds or bytes/s
}{{"lat 64B RTT p50", false, 2e-6}, {"lat 64B RTT p99", false, 3e-6}, {"bw 64KiB bandwidth", true, 12e9}}

// largeFixture is a synthetic report of n hosts in racks of 25 (labels
// rack=r01, ...), all-pairs in one direction, as the coordinator leaves
// it above LargeFleetHosts: hosts, grouping, matrices and suspects from
// package fleet, no runs. Good pairs spread within 5% of each metric's
// value; node042 is 3x worse with every partner; node007 -> node063
// fails its latency test. Nothing here was measured.
func largeFixture(t testing.TB, n int, groupBy string) *Report {
	t.Helper()
	hosts := make([]fleet.Host, n)
	for i := range hosts {
		hosts[i] = fleet.Host{Name: fmt.Sprintf("node%03d", i+1), Addr: fmt.Sprintf("10.0.%d.%d:18520", i/250, i%250+1),
			Labels: map[string]string{"rack": fmt.Sprintf("r%02d", i/25+1)}}
	}
	pairs, err := fleet.AllPairs.Pairs(hosts, fleet.PatternOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := make([]fleet.Outcome, 0, len(pairs)*len(largeMetrics))
	for _, p := range pairs {
		a, b := p.A.Host, p.B.Host
		spread := 1 + 0.05*float64((a*31+b*17)%11)/10
		for _, m := range largeMetrics {
			o := fleet.Outcome{Pair: p, Metric: m.name, OK: true, HigherIsBetter: m.higher}
			worse := spread
			if a == largeBadHost || b == largeBadHost {
				worse *= 3
			}
			if a == largeLinkA && b == largeLinkB && !m.higher {
				o.OK = false
				worse *= 8
			}
			o.Value = m.value * worse
			if m.higher {
				o.Value = m.value / worse
			}
			outcomes = append(outcomes, o)
		}
	}
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f := &Fleet{Source: "hostfile racks.hosts", Hosts: hosts, Pattern: fleet.AllPairs, LagFactor: fleet.DefaultLagFactor, GroupBy: groupBy,
		Rounds: []Round{{Index: 0, Kind: fleet.Disjoint, Pairs: []fleet.Pair{}, Started: start, Finished: start.Add(40 * time.Minute)}}}
	if f.Groups, err = GroupHosts(hosts, groupBy); err != nil {
		t.Fatal(err)
	}
	if f.Matrices, err = fleet.Matrices(hosts, outcomes, f.LagFactor); err != nil {
		t.Fatal(err)
	}
	if f.Suspects, err = fleet.Suspects(hosts, outcomes, f.LagFactor); err != nil {
		t.Fatal(err)
	}
	r := &Report{Schema: Schema, Tool: "rdmarun test", Scenario: "large-fixture", File: "scenarios/large.yaml",
		Peer: fmt.Sprintf("%d hosts", n), Started: start, Finished: start.Add(41 * time.Minute), Fleet: f, Runs: []Run{}}
	r.Summary = Summary{Runs: len(pairs) * 2, Passed: len(pairs)*2 - 1, Failed: 1}
	return r
}

func TestLargeFixture(t *testing.T) {
	r := largeFixture(t, 100, "rack")
	var got []string
	for _, s := range r.Fleet.Suspects {
		got = append(got, s.Kind+" "+s.Name)
	}
	if want := "host node042,link node007 <-> node063"; strings.Join(got, ",") != want {
		t.Errorf("suspects %q, want %q", got, want)
	}
	if !r.Fleet.Large() || len(groupsOf(r.Fleet)) != 4 {
		t.Errorf("large %v, %d groups; want a large fleet in 4 racks", r.Fleet.Large(), len(groupsOf(r.Fleet)))
	}
}

// TestLargeFleetWriters: the large forms' golden files, for 100 hosts in
// 4 racks: the main HTML page and the first rack's page, JUnit, text and
// compact text.
func TestLargeFleetWriters(t *testing.T) {
	r := largeFixture(t, 100, "rack")
	dir := t.TempDir()
	files, err := WriteHTML(filepath.Join(dir, "large.html"), r)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if want := "large.html large-group-01.html large-group-02.html large-group-03.html large-group-04.html"; strings.Join(names, " ") != want {
		t.Fatalf("WriteHTML wrote %q, want %q", names, want)
	}
	for _, name := range []string{"large.html", "large-group-01.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, name, b)
	}
	for name, write := range map[string]func(*bytes.Buffer, *Report) error{
		"large.junit.xml":   func(b *bytes.Buffer, r *Report) error { return JUnit(b, r) },
		"large.txt":         func(b *bytes.Buffer, r *Report) error { return Text(b, r) },
		"large.compact.txt": func(b *bytes.Buffer, r *Report) error { return Compact(b, r) },
	} {
		var b bytes.Buffer
		if err := write(&b, r); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, name, b.Bytes())
	}
}

// TestLargeFleetHTML: the main page shows groups, not pairs, names the
// planted faults, links every group's page, and has no script; a group
// page has every pair its hosts initiate.
func TestLargeFleetHTML(t *testing.T) {
	r := largeFixture(t, 100, "rack")
	dir := t.TempDir()
	files, err := WriteHTML(filepath.Join(dir, "large.html"), r)
	if err != nil {
		t.Fatal(err)
	}
	main, _ := os.ReadFile(files[0])
	page := string(main)
	if n, want := strings.Count(page, `<g class="cell `), 3*4*4; n != want {
		t.Errorf("the main page has %d heat map cells, want %d (3 metrics x 4 x 4 racks)", n, want)
	}
	for _, want := range []string{
		`<a href="large-group-02.html">`, "node042 is bad with", "node007 &lt;-&gt; node063",
		"r01 -&gt; r03, worst node007 -&gt; node063", // the link's latency square
		"r02 -&gt; r03, worst node042 -&gt; node",    // the bad host's square, as initiator
		`<table class="worst">`, `<table class="groups">`, "grouped by their label rack",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the main page lacks %q", want)
		}
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "<script") {
			t.Errorf("%s has a script", filepath.Base(f))
		}
	}
	g1, _ := os.ReadFile(files[1])
	// Rack r01 is node001..node025; in one direction host i initiates
	// against every later host: 99+98+...+75 pairs.
	want := 0
	for i := range 25 {
		want += 99 - i
	}
	if n := strings.Count(string(g1), "<tr><td>node"); n != want {
		t.Errorf("rack r01's page has %d pair rows, want %d", n, want)
	}
	// node007 -> node063 failed both latency metrics, which then have
	// no value.
	if n := strings.Count(string(g1), "<td class=fail>- fail<td class=fail>-"); n != 2 {
		t.Errorf("rack r01's page marks %d cells failed, want node007 -> node063's 2", n)
	}
	// Written alone, the page says where its group pages are.
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "large-group-") || !strings.Contains(b.String(), "write it to a file (--html FILE)") {
		t.Error("HTML alone links group pages it did not write, or does not say so")
	}
}

// TestLargeFleetJUnit: one testcase per host, failing exactly for the
// hosts in a bad pair: the bad host and every partner, the link's ends.
func TestLargeFleetJUnit(t *testing.T) {
	r := largeFixture(t, 100, "")
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var out junit.Suites
	if err := xml.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Suites) != 1 || len(out.Suites[0].Cases) != 100 {
		t.Fatalf("%d suites; want 1 of 100 testcases", len(out.Suites))
	}
	failed := 0
	for _, c := range out.Suites[0].Cases {
		if c.Failure == nil {
			continue
		}
		failed++
		if c.Name == "node042" && !strings.Contains(c.Failure.Body, "... and ") {
			t.Errorf("node042's 297 bad pairs are not cut short:\n%s", c.Failure.Body)
		}
		if c.Name == "node007" && !strings.Contains(c.Failure.Body, "lat 64B RTT p99: node007 -> node063") {
			t.Errorf("node007's failure lacks its link:\n%s", c.Failure.Body)
		}
	}
	// Every host pairs with node042, so every host fails: the test is
	// that the counts agree and the suspects go with them.
	if failed != 100 || out.Suites[0].Failures != 100 || !strings.Contains(out.Suites[0].SystemOut, "node042") {
		t.Errorf("%d failed testcases (suite says %d), suspects %q", failed, out.Suites[0].Failures, out.Suites[0].SystemOut)
	}
}

// TestTextRanksWideMatrices: a fleet at or below LargeFleetHosts whose
// matrix is too wide prints the ranked list instead, without groups.
func TestTextRanksWideMatrices(t *testing.T) {
	r := largeFixture(t, 30, "")
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "The matrices are too wide to print") || strings.Contains(b.String(), "groups,") ||
		strings.Contains(b.String(), "initiator \\ responder") {
		t.Errorf("30 hosts: no ranked list in place of the matrices:\n%s", b.String())
	}
	if w := matrixWidth(r.Fleet.Matrices[0]); w <= textMatrixColumns {
		t.Errorf("30 hosts' matrix is %d columns, which fits; the test needs one that does not", w)
	}
	small := fleetFixture(t)
	if rankedText(small.Fleet) {
		t.Error("the 4-host fixture's matrices fit, but the text ranks them")
	}
}

// TestLargeHTMLPageBound: at 2,000 hosts with every pair run in both
// directions, the largest page the HTML writes is under 5 MB; group
// pages are cut at htmlPageBudget by construction, and the main page
// draws at most MaxGroups squared squares per metric.
func TestLargeHTMLPageBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 2,000-host report")
	}
	for _, metrics := range []int{3, 9} {
		r := syntheticReport(2000)
		if metrics > 3 {
			// The maps' size is the groups', not the pairs': keep a
			// pair per host and group (b = a mod 32) so every square is
			// drawn and the group pages stay few.
			for _, m := range r.Fleet.Matrices {
				for a, row := range m.Cells {
					for b := range row {
						if b%32 != a%32 {
							row[b] = nil
						}
					}
				}
			}
		}
		// More metrics share the first's cells: the page is as large,
		// the test's memory is not.
		for k := len(r.Fleet.Matrices); k < metrics; k++ {
			m := r.Fleet.Matrices[1]
			m.Metric = fmt.Sprintf("lat %d RTT p50", k)
			r.Fleet.Matrices = append(r.Fleet.Matrices, m)
		}
		dir := t.TempDir()
		start := time.Now()
		files, err := WriteHTML(filepath.Join(dir, "fleet.html"), r)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		var largest, total int64
		var largestName string
		maps := 0
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			total += st.Size()
			if st.Size() > largest {
				largest, largestName = st.Size(), filepath.Base(f)
			}
			if strings.Contains(f, "-map-") {
				maps++
			}
		}
		main, _ := os.Stat(files[0])
		t.Logf("2000 hosts, %d metrics: %d files (%d map pages), %.1f MB in all, the largest %s %.2f MB, the main page %.2f MB; written in %v",
			metrics, len(files), maps, float64(total)/1e6, largestName, float64(largest)/1e6, float64(main.Size())/1e6, took.Round(time.Millisecond))
		if largest >= 5e6 {
			t.Errorf("%d metrics: the largest page, %s, is %d bytes; want under 5 MB", metrics, largestName, largest)
		}
		if largest > htmlPageBudget && largestName != "fleet.html" {
			t.Errorf("%d metrics: page %s is %d bytes, over its budget %d", metrics, largestName, largest, htmlPageBudget)
		}
		if (maps > 0) != (metrics > 3) {
			t.Errorf("%d metrics: %d map pages; want them only when the maps pass mainMapsBudget", metrics, maps)
		}
	}
}

// syntheticReport is n hosts with every ordered pair's cells filled (as
// both_directions gives), the 3 metrics of largeFixture, built straight
// into matrices: package fleet's judging of 12 million outcomes would
// cost the test a gigabyte. Good cells share a few values.
func syntheticReport(n int) *Report {
	hosts := make([]fleet.Host, n)
	names := make([]string, n)
	for i := range hosts {
		names[i] = fmt.Sprintf("node%04d", i+1)
		hosts[i] = fleet.Host{Name: names[i], Addr: names[i] + ":18520"}
	}
	bad := n / 3
	f := &Fleet{Source: "list", Hosts: hosts, Pattern: fleet.AllPairs, LagFactor: fleet.DefaultLagFactor}
	for _, m := range largeMetrics {
		good := make([]*fleet.Cell, 11)
		for i := range good {
			ratio := 1 + 0.05*float64(i)/10
			v := m.value * ratio
			if m.higher {
				v = m.value / ratio
			}
			good[i] = &fleet.Cell{Status: fleet.StatusOK, Value: v, Ratio: ratio}
		}
		v := m.value * 3
		if m.higher {
			v = m.value / 3
		}
		lag := &fleet.Cell{Status: fleet.StatusLag, Value: v, Ratio: 3}
		mx := fleet.Matrix{Metric: m.name, HigherIsBetter: m.higher, Median: m.value, Hosts: names, Cells: make([][]*fleet.Cell, n)}
		for a := range mx.Cells {
			mx.Cells[a] = make([]*fleet.Cell, n)
			for b := range mx.Cells[a] {
				switch {
				case a == b:
				case a == bad || b == bad:
					mx.Cells[a][b] = lag
				default:
					mx.Cells[a][b] = good[(a*31+b*17)%11]
				}
			}
		}
		f.Matrices = append(f.Matrices, mx)
	}
	f.Suspects = []fleet.Suspect{{Kind: "host", Name: names[bad], Score: float64(6 * (n - 1)),
		Evidence: []string{fmt.Sprintf("%s is bad with %d of %d partners", names[bad], n-1, n-1)}}}
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	return &Report{Schema: Schema, Tool: "rdmarun test", Scenario: "synthetic", Peer: fmt.Sprintf("%d hosts", n),
		Started: start, Finished: start.Add(time.Hour), Fleet: f}
}

// TestLargeFleetJSONMatchesSchema: the grouping and the hosts' labels
// are documented fields of the report's JSON.
func TestLargeFleetJSONMatchesSchema(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, largeFixture(t, 100, "rack")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"group_by":"rack"`, `"groups":["r01"`, `"labels":{"rack":"r01"}`} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), ""), want) {
			t.Errorf("the JSON lacks %s", want)
		}
	}
	if err := validateJSON(t, compileSchema(t), b.Bytes()); err != nil {
		t.Fatalf("the large fleet's JSON does not match schema.json:\n%v", err)
	}
}
