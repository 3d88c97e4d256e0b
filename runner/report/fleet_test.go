package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// fleetFixture is a hand-made fleet report: 4 hosts, all-pairs in 3
// rounds of 2 pairs, a latency and a bandwidth case per pair. node3 lags
// with every partner (3x the RTT, a third of the bandwidth), node1 ->
// node2 fails its latency threshold and node3 -> node4 cannot reach
// node4. The matrices and suspects come from package fleet, as the
// coordinator makes them. Its numbers are invented for the layout tests;
// nothing here was measured.
func fleetFixture(t testing.TB) *Report {
	t.Helper()
	complete := func(s rdma.TestSpec) rdma.Test {
		c, err := s.Complete()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	hosts := []fleet.Host{{Name: "node1", Addr: "10.0.0.1:18520"}, {Name: "node2", Addr: "10.0.0.2:18520"},
		{Name: "node3", Addr: "10.0.0.3:18520"}, {Name: "node4", Addr: "10.0.0.4:18520"}}
	pairs, err := fleet.AllPairs.Pairs(hosts, fleet.PatternOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := fleet.AllPairs.Rounds(pairs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 3 {
		t.Fatalf("all-pairs over 4 hosts gave %d rounds, the fixture wants 3", len(plan))
	}
	const lagging, unreachable = 2, 3 // node3 lags; node4 does not answer node3
	latSpec := complete(rdma.TestSpec{Op: rdma.OpWrite, Size: 64, Iterations: 1000})
	bwSpec := complete(rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 65536, Iterations: 1000})
	dev := func(h int) string { return fmt.Sprintf("rxe%d", h) }
	latency := func(p fleet.Pair, p50, p99 float64) *rdma.Result {
		s := rdma.Summary{Count: 1000, Min: p50 * 0.9, Max: p99 * 1.5, Mean: p50 * 1.05, Stddev: p50 / 20, P50: p50, P90: p50 * 1.2, P99: p99, P999: p99 * 1.2, P9999: p99 * 1.4}
		half := s.Half()
		return &rdma.Result{Spec: latSpec, Requester: rdma.EndpointInfo{Device: dev(p.A.Host)}, Responder: rdma.EndpointInfo{Device: dev(p.B.Host)},
			Latency: &rdma.LatencyStats{RTT: s, OneWay: &half}}
	}
	bandwidth := func(p fleet.Pair, bps float64) *rdma.Result {
		d := rdma.Direction{From: dev(p.A.Host), To: dev(p.B.Host), Messages: 1000, Bytes: 1000 * 65536, Seconds: 1000 * 65536 / bps, BytesPerSecond: bps, MessagesPerSec: bps / 65536}
		return &rdma.Result{Spec: bwSpec, Requester: rdma.EndpointInfo{Device: dev(p.A.Host)}, Responder: rdma.EndpointInfo{Device: dev(p.B.Host)},
			Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{d}, PerQP: [][]rdma.Direction{{d}}}}
	}
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	r := &Report{Schema: Schema, Tool: "rdmarun test", Scenario: "fleet-fixture", File: "scenarios/fleet.yaml", Peer: "4 hosts", Started: start}
	f := &Fleet{Source: "list", Hosts: hosts, Pattern: fleet.AllPairs, LagFactor: fleet.DefaultLagFactor}
	var outcomes []fleet.Outcome
	at := start
	for ri, round := range plan {
		rd := Round{Index: ri, Kind: round.Kind, Pairs: round.Pairs, Started: at}
		end := at
		for _, p := range round.Pairs {
			a, b := hosts[p.A.Host].Name, hosts[p.B.Host].Name
			place := PairRun{A: a, B: b, Pair: p, Round: ri}
			slow := 1.0
			if p.A.Host == lagging || p.B.Host == lagging {
				slow = 3
			}
			env := p.A.Host == lagging && p.B.Host == unreachable
			// Latency: RTT p50 2 us (6 us with node3), p99 3 us; the
			// threshold p99 < 20us fails for node1 -> node2 only.
			latPlace, bwPlace := place, place
			lat := Run{Case: "lat", Index: 0, Spec: latSpec, Started: at, Seconds: 1.5, Pair: &latPlace}
			p99 := 3000 * slow
			if p.A.Host == 0 && p.B.Host == 1 {
				p99 = 25000
			}
			bw := Run{Case: "bw", Index: 1, Spec: bwSpec, Started: at.Add(1500 * time.Millisecond), Seconds: 2, Pair: &bwPlace}
			if env {
				msg := fmt.Sprintf("relay %s -> %s: responder unreachable: dial tcp %s: i/o timeout", a, b, hosts[p.B.Host].Addr)
				lat.Status, lat.Error, lat.Seconds = Errored, msg, 1
				bw.Status, bw.Error, bw.Seconds, bw.Started = Errored, msg, 1, at.Add(time.Second)
				for _, m := range []string{"lat 64B RTT p50", "lat 64B RTT p99"} {
					outcomes = append(outcomes, fleet.Outcome{Pair: p, Metric: m, Env: true})
				}
				outcomes = append(outcomes, fleet.Outcome{Pair: p, Metric: "bw 64KiB bandwidth", Env: true, HigherIsBetter: true})
			} else {
				lat.Result = latency(p, 2000*slow+float64(10*ri), p99)
				lat.Status = Passed
				lat.Verdicts = []Verdict{{Expr: "p99 < 20us", Passed: p99 < 20000, Values: map[string]float64{"p99": p99 / 1e3}}}
				if p99 >= 20000 {
					lat.Status = Failed
				}
				ok := lat.Status == Passed
				outcomes = append(outcomes,
					fleet.Outcome{Pair: p, Metric: "lat " + units.FormatBytes(64) + " RTT p50", OK: ok, Value: lat.Result.Latency.RTT.P50 / 1e9},
					fleet.Outcome{Pair: p, Metric: "lat " + units.FormatBytes(64) + " RTT p99", OK: ok, Value: p99 / 1e9})
				bw.Result = bandwidth(p, 12e9/slow-float64(1e7*ri))
				bw.Status = Passed
				outcomes = append(outcomes, fleet.Outcome{Pair: p, Metric: "bw " + units.FormatBytes(65536) + " bandwidth", OK: true,
					Value: bw.Result.Bandwidth.Directions[0].BytesPerSecond, HigherIsBetter: true})
			}
			r.Runs = append(r.Runs, lat, bw)
			if done := bw.Started.Add(time.Duration(bw.Seconds * float64(time.Second))); done.After(end) {
				end = done
			}
		}
		rd.Finished = end
		f.Rounds = append(f.Rounds, rd)
		at = end.Add(100 * time.Millisecond)
	}
	if f.Matrices, err = fleet.Matrices(hosts, outcomes, f.LagFactor); err != nil {
		t.Fatal(err)
	}
	if f.Suspects, err = fleet.Suspects(hosts, outcomes, f.LagFactor); err != nil {
		t.Fatal(err)
	}
	r.Fleet = f
	r.Finished = f.Rounds[len(f.Rounds)-1].Finished
	r.Tally()
	return r
}

// The fixture must hold what its comment promises, or the golden files
// test less than they seem to.
func TestFleetFixture(t *testing.T) {
	r := fleetFixture(t)
	if s := r.Summary; s != (Summary{Runs: 12, Passed: 9, Failed: 1, Errors: 2}) {
		t.Errorf("summary %+v", s)
	}
	for i, rd := range r.Fleet.Rounds {
		if len(rd.Pairs) != 2 {
			t.Errorf("round %d has %d pairs, want 2", i, len(rd.Pairs))
		}
	}
	if len(r.Fleet.Matrices) != 3 {
		t.Fatalf("%d matrices, want 3 (RTT p50, RTT p99, bandwidth)", len(r.Fleet.Matrices))
	}
	var got []string
	for _, s := range r.Fleet.Suspects {
		got = append(got, s.Kind+" "+s.Name)
	}
	if want := "host node3,link node1 <-> node2"; strings.Join(got, ",") != want {
		t.Errorf("suspects %q, want %q", got, want)
	}
}

func TestFleetWriters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer, *Report) error
	}{
		{"fleet.txt", func(b *bytes.Buffer, r *Report) error { return Text(b, r) }},
		{"fleet.compact.txt", func(b *bytes.Buffer, r *Report) error { return Compact(b, r) }},
		{"fleet.json", func(b *bytes.Buffer, r *Report) error { return JSON(b, r) }},
		{"fleet.junit.xml", func(b *bytes.Buffer, r *Report) error { return JUnit(b, r) }},
		{"fleet.html", func(b *bytes.Buffer, r *Report) error { return HTML(b, r) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, fleetFixture(t)); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.name, b.Bytes())
		})
	}
}

// Every output must name the suspects, and show the matrices in units a
// person reads: microseconds and Gb/s.
// fleetWriters are every writer of a fleet report, by name.
var fleetWriters = map[string]func(*bytes.Buffer, *Report) error{
	"text":    func(b *bytes.Buffer, r *Report) error { return Text(b, r) },
	"compact": func(b *bytes.Buffer, r *Report) error { return Compact(b, r) },
	"json":    func(b *bytes.Buffer, r *Report) error { return JSON(b, r) },
	"junit":   func(b *bytes.Buffer, r *Report) error { return JUnit(b, r) },
	"html":    func(b *bytes.Buffer, r *Report) error { return HTML(b, r) },
}

func TestFleetSuspectsEverywhere(t *testing.T) {
	for name, write := range fleetWriters {
		var b bytes.Buffer
		if err := write(&b, fleetFixture(t)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := b.String()
		for _, want := range []string{"node3", "node1 &lt;-&gt; node2", "node3 is bad with 3 of 3 partners"} {
			if name == "text" || name == "compact" || name == "json" {
				want = strings.ReplaceAll(strings.ReplaceAll(want, "&lt;", "<"), "&gt;", ">")
			}
			if name == "json" {
				want = strings.ReplaceAll(strings.ReplaceAll(want, "<", `\u003c`), ">", `\u003e`)
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q", name, want)
			}
		}
	}
	var b bytes.Buffer
	if err := Compact(&b, fleetFixture(t)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"lat 64B RTT p50, microseconds (fleet median 2.00 us)",
		"bw 64KiB bandwidth, Gb/s (10^9 bit/s) (fleet median 95.96 Gb/s)",
		"6.00 lag", // node1 -> node3's RTT p50: 3x the median
		"32.00 lag",
		"fail", "env",
		"3 rounds (0 confirmation), at most 2 pairs at once, wall time 10.700 s against 19.500 s for the runs one after another",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the compact text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestFleetJSONMatchesSchema(t *testing.T) {
	s := compileSchema(t)
	var b bytes.Buffer
	if err := JSON(&b, fleetFixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(t, s, b.Bytes()); err != nil {
		t.Fatalf("the fleet JSON report does not match schema.json:\n%v", err)
	}
	// The schema must notice undocumented fields and bad values in the
	// new parts, not only at the top.
	for _, tc := range []struct {
		name  string
		spoil func(doc map[string]any)
		want  string
	}{
		{"fleet field", func(d map[string]any) { d["fleet"].(map[string]any)["surprise"] = 1 }, "surprise"},
		{"pattern", func(d map[string]any) { d["fleet"].(map[string]any)["pattern"] = "mesh" }, "pattern"},
		{"cell status", func(d map[string]any) {
			cells := d["fleet"].(map[string]any)["matrices"].([]any)[0].(map[string]any)["cells"].([]any)
			cells[0].([]any)[1].(map[string]any)["status"] = "slow"
		}, "status"},
		{"suspect kind", func(d map[string]any) {
			d["fleet"].(map[string]any)["suspects"].([]any)[0].(map[string]any)["kind"] = "switch"
		}, "kind"},
		{"run pair", func(d map[string]any) { d["runs"].([]any)[0].(map[string]any)["pair"].(map[string]any)["round"] = -1 }, "round"},
		{"run started", func(d map[string]any) { d["runs"].([]any)[0].(map[string]any)["started"] = "yesterday" }, "started"},
	} {
		var doc map[string]any
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		tc.spoil(doc)
		bad, _ := json.Marshal(doc)
		if err := validateJSON(t, s, bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: a bad value passed the schema: %v", tc.name, err)
		}
	}
}

func TestFleetJSONRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, fleetFixture(t)); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	f := back.Fleet
	if f == nil || len(f.Hosts) != 4 || len(f.Rounds) != 3 || len(f.Matrices) != 3 || len(f.Suspects) != 2 {
		t.Fatalf("round trip lost the fleet: %+v", f)
	}
	if c := f.Matrices[0].Cells[0][0]; c != nil {
		t.Errorf("a host against itself came back as %+v, want null", c)
	}
	if p := back.Runs[0].Pair; p == nil || p.A == "" || back.Runs[0].Started.IsZero() {
		t.Errorf("run 0 lost its pair or start: %+v", back.Runs[0])
	}
}

// TestFleetJUnit reads the XML back: one testcase per pair and run, the
// pair in the name, the failure and the environment error in place, and
// the suspects in every suite's properties and system-out.
func TestFleetJUnit(t *testing.T) {
	r := fleetFixture(t)
	r.Runs[len(r.Runs)-1].Pair.Attempt = 1 // as a confirmation run would be
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if got.Tests != 12 || got.Failures != 1 || got.Errors != 2 || len(got.Suites) != 2 {
		t.Errorf("totals %+v", got)
	}
	names := map[string]junitCase{}
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			names[c.Classname+" | "+c.Name] = c
		}
		var props []string
		for _, p := range s.Props {
			props = append(props, p.Name+"="+p.Value)
		}
		if !strings.Contains(strings.Join(props, "\n"), "suspect_1=host node3, score ") {
			t.Errorf("suite %s: no suspect in the properties: %q", s.Name, props)
		}
		if !strings.Contains(s.SystemOut, "node3 is bad with 3 of 3 partners") {
			t.Errorf("suite %s: system-out lacks the evidence: %q", s.Name, s.SystemOut)
		}
	}
	if len(names) != 12 {
		t.Errorf("%d distinct testcases, want 12: %v", len(names), names)
	}
	failed, ok := names["fleet-fixture.lat | 64B latency qps=1 busy_poll node1 -> node2"]
	if !ok || failed.Failure == nil || !strings.Contains(failed.Failure.Message, "p99 < 20us with p99=25") {
		t.Errorf("node1 -> node2's latency failure: %+v (found %v)", failed.Failure, ok)
	}
	env, ok := names["fleet-fixture.lat | 64B latency qps=1 busy_poll node3 -> node4"]
	if !ok || env.Error == nil || !strings.Contains(env.Error.Message, "unreachable") {
		t.Errorf("node3 -> node4's environment error: %+v (found %v)", env.Error, ok)
	}
	last := r.Runs[len(r.Runs)-1]
	name := fmt.Sprintf("fleet-fixture.bw | 64KiB bandwidth qps=1 busy_poll %s -> %s attempt 1", last.Pair.A, last.Pair.B)
	if _, ok := names[name]; !ok {
		t.Errorf("no testcase %q for a confirmation run", name)
	}
}

// TestFleetHTML checks the heat maps' shape: one per metric, a cell per
// host pair with its status, and the suspects table.
func TestFleetHTML(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, fleetFixture(t)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, `<svg class="heatmap"`); n != 3 {
		t.Errorf("%d heat maps, want 3 (RTT p50, RTT p99, bandwidth)", n)
	}
	// 6 pairs ran, one direction each, per metric; the other 10 of the 16
	// cells are a host against itself or a direction that did not run.
	// node1 -> node2 failed only its latency case, so its bandwidth is ok.
	for status, want := range map[string]int{"ok": 2 + 2 + 3, "lag": 3 * 2, "fail": 2, "env": 3, "none": 3 * 10} {
		if n := strings.Count(page, `class="cell `+status+`"`); n != want {
			t.Errorf("%d heat map cells of status %s, want %d", n, status, want)
		}
	}
	for _, want := range []string{"values in microseconds", "values in Gb/s (10^9 bit/s)", `<table class="suspects">`, "node1 &lt;-&gt; node2"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, s := range []string{"<script", "http://", "https://"} {
		if strings.Contains(page, s) {
			t.Errorf("the page contains %q; it must be self-contained", s)
		}
	}
}

// TestFleetHeatMapDense: past denseAbove hosts the cells shrink and drop
// their values (the tooltips keep them), so a big fleet's map stays on
// a screen.
func TestFleetHeatMapDense(t *testing.T) {
	var hosts []fleet.Host
	for i := range 20 {
		hosts = append(hosts, fleet.Host{Name: fmt.Sprintf("n%02d", i+1)})
	}
	pairs, err := fleet.Ring.Pairs(hosts, fleet.PatternOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []fleet.Outcome
	for i, p := range pairs {
		v := 2e-6
		if i == 7 {
			v = 9e-6
		}
		outcomes = append(outcomes, fleet.Outcome{Pair: p, Metric: "lat 64B RTT p50", OK: true, Value: v})
	}
	ms, err := fleet.Matrices(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	svg := heatMap(ms[0], fleet.DefaultLagFactor)
	if n := strings.Count(svg, `<g class="cell `); n != 400 {
		t.Errorf("%d cells, want 400", n)
	}
	if strings.Contains(svg, `class="val"`) {
		t.Error("a dense map prints values in its cells")
	}
	if !strings.Contains(svg, `<title>n08 -&gt; n09: 9.00 us, 4.50x the fleet median (lag)</title>`) || !strings.Contains(svg, `class="mark" fill="#fff">l</text>`) {
		t.Errorf("the lagging pair's tooltip or mark is missing:\n%s", svg)
	}
	var w int
	if _, err := fmt.Sscanf(svg[strings.Index(svg, `width="`):], `width="%d"`, &w); err != nil || w > 700 {
		t.Errorf("width %d (%v), want at most 700 px for 20 hosts", w, err)
	}
}

// TestFleetDoctorEverywhere: the findings on the suspects' hosts show in
// every writer that shows a doctor, the compact text included.
func TestFleetDoctorEverywhere(t *testing.T) {
	r := fleetFixture(t)
	r.Doctor = []DoctorEnd{
		NewDoctorEnd("node3", doctor.Report{Devices: []string{"mlx5_0"}, Checks: []doctor.Check{
			{Name: "pcie.width", Device: "mlx5_0", Status: doctor.Fail, Expected: "x16", Found: "x8 of x16"},
		}}),
		DoctorEndError("node1", errors.New("connection refused")),
	}
	for name, write := range fleetWriters {
		var b bytes.Buffer
		if err := write(&b, r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, want := range []string{"x8 of x16", "connection refused"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s output lacks %q", name, want)
			}
		}
	}
}
