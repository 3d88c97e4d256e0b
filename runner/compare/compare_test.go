package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/schematest"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// reportOf builds a report: latency runs of the named cases with their
// RTT scaled by factor, and a bandwidth case of three repeats.
func reportOf(seed uint64, latFactor, bwFactor float64, cases ...string) *report.Report {
	gen := rand.New(rand.NewPCG(seed, 11))
	rep := &report.Report{Schema: report.Schema, Tool: "rdmarun test", Scenario: "synthetic",
		Started: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	info := func(dev string) rdma.EndpointInfo { return rdma.EndpointInfo{Device: dev} }
	for _, c := range cases {
		spec, _ := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Size: 64, Iterations: 1000}.Complete()
		res := runOf(gen, bimodal, 1000, latFactor)
		res.Requester, res.Responder = info("rxe1"), info("rxe0")
		rep.Runs = append(rep.Runs, report.Run{Case: c, Status: report.Passed, Spec: spec, Result: res})
	}
	spec, _ := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 65536}.Complete()
	for i := 1; i <= 3; i++ {
		bw := 5e7 * bwFactor * (1 + 0.02*gen.NormFloat64())
		rep.Runs = append(rep.Runs, report.Run{Case: "bw", Repeat: i, Status: report.Passed, Spec: spec, Result: &rdma.Result{
			Requester: info("rxe1"), Responder: info("rxe0"),
			Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{{BytesPerSecond: bw, MessagesPerSec: bw / 65536}}}}})
	}
	rep.Tally()
	return rep
}

func TestReports(t *testing.T) {
	for _, tc := range []struct {
		name      string
		base, new *report.Report
		edit      func(base, new *report.Report)
		summary   Summary
		first     Verdict // the first run's verdict: regressions sort first
	}{
		{name: "same", base: reportOf(1, 1, 1, "lat"), new: reportOf(2, 1, 1, "lat"),
			summary: Summary{Compared: 2, Unchanged: 2}, first: Unchanged},
		{name: "latency regressed", base: reportOf(1, 1, 1, "lat"), new: reportOf(2, 1.2, 1, "lat"),
			summary: Summary{Compared: 2, Regressed: 1, Unchanged: 1}, first: Regressed},
		{name: "bandwidth regressed", base: reportOf(1, 1, 1, "lat"), new: reportOf(2, 1, 0.8, "lat"),
			summary: Summary{Compared: 2, Regressed: 1, Unchanged: 1}, first: Regressed},
		{name: "latency improved", base: reportOf(1, 1, 1, "lat"), new: reportOf(2, 0.8, 1, "lat"),
			summary: Summary{Compared: 2, Improved: 1, Unchanged: 1}, first: Improved},
		{name: "a case only in one", base: reportOf(1, 1, 1, "lat", "old"), new: reportOf(2, 1, 1, "lat", "added"),
			summary: Summary{Compared: 2, Unchanged: 2, Unmatched: 2}, first: Unchanged},
		{name: "other devices", base: reportOf(1, 1, 1, "lat"), new: reportOf(2, 1, 1, "lat"),
			edit:    func(_, n *report.Report) { n.Runs[0].Result.Requester.Device = "mlx5_0" },
			summary: Summary{Compared: 2, Incomparable: 1, Unchanged: 1}, first: Incomparable},
		{name: "errored in new", base: reportOf(1, 1, 1, "lat"), new: reportOf(2, 1, 1, "lat"),
			edit: func(_, n *report.Report) {
				n.Runs[0].Status, n.Runs[0].Result, n.Runs[0].Error = report.Errored, nil, "stalled: nothing arrived for 5s"
			},
			summary: Summary{Compared: 2, Regressed: 1, Unchanged: 1}, first: Regressed},
		{name: "no samples", base: reportOf(1, 1, 1, "lat"), new: reportOf(2, 1, 1, "lat"),
			edit:    func(b, _ *report.Report) { b.Runs[0].Result.Latency.Buckets = nil },
			summary: Summary{Compared: 2, Unchanged: 1, NotJudged: 1}, first: Unchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit != nil {
				tc.edit(tc.base, tc.new)
			}
			c, err := Reports(tc.base, tc.new, "base.json", "new.json", DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if c.Summary != tc.summary {
				t.Errorf("summary %+v, want %+v", c.Summary, tc.summary)
			}
			if c.Runs[0].Verdict != tc.first {
				t.Errorf("first run %s, want %s", c.Runs[0].Verdict, tc.first)
			}
			var text bytes.Buffer
			if err := Text(&text, c); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", strings.ReplaceAll(tc.name, " ", "-")+".txt"), text.Bytes())
		})
	}
}

// TestReportsRepeatable: the same inputs and seed give the same
// comparison, down to the interval's bounds.
func TestReportsRepeatable(t *testing.T) {
	base, next := reportOf(1, 1, 1, "lat"), reportOf(2, 1.04, 1, "lat")
	a, _ := Reports(base, next, "b", "n", DefaultOptions())
	b, _ := Reports(base, next, "b", "n", DefaultOptions())
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Error("two comparisons of the same reports differ")
	}
}

func TestReportsSchemas(t *testing.T) {
	base, next := reportOf(1, 1, 1, "lat"), reportOf(2, 1, 1, "lat")
	next.Schema = "rdmarun.report/v3"
	_, err := Reports(base, next, "base.json", "new.json", DefaultOptions())
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "new.json is rdmarun.report/v3") {
		t.Errorf("error %v, want the schemas named", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{MinEffect: -0.1, Confidence: 0.95, Resamples: 2000},
		{MinEffect: 1, Confidence: 0.95, Resamples: 2000},
		{MinEffect: 0.05, Confidence: 1, Resamples: 2000},
		{MinEffect: 0.05, Confidence: 0.3, Resamples: 2000},
		{MinEffect: 0.05, Confidence: 0.95, Resamples: 10},
	} {
		if o.Validate() == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Error(err)
	}
}

func TestParse(t *testing.T) {
	good, err := json.Marshal(reportOf(1, 1, 1, "lat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data, err string
	}{
		{"truncated", string(good[:len(good)/2]), "r.json: cut short after"},
		{"not json", "schema: x\n", "r.json:1:1: not JSON"},
		{"another tool's", `{"schema": "something/v1"}`, `r.json: not an rdmarun report (schema "something/v1")`},
		{"no schema", `{"runs": []}`, `r.json: not an rdmarun report (schema "")`},
		{"older schema", `{"schema": "rdmarun.report/v3"}`, "r.json: the reports have different schema versions: it is rdmarun.report/v3, this rdmarun reads " + report.Schema},
		{"wrong type", `{"schema": "` + report.Schema + `", "runs": [{"case": 5}]}`, "r.json:1:"},
		{"samples disagree with the summary", strings.Replace(string(good), `"buckets":[[`, `"buckets":[[5,1],[`, 1), "r.json: run 0 (case \"lat\"): latency buckets hold 1001 samples, the RTT summary 1000"},
		{"bad bucket", strings.Replace(string(good), `"buckets":[[`, `"buckets":[[-5,1],[`, 1), "latency bucket [-5, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("r.json", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want it to hold %q", err, tc.err)
			}
		})
	}
	rep, err := Parse("r.json", good)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.Runs[0].Result.Latency.Buckets); n == 0 {
		t.Error("the samples did not survive the JSON")
	}
}

func FuzzParse(f *testing.F) {
	good, _ := json.Marshal(reportOf(1, 1, 1, "lat"))
	f.Add(good)
	f.Add([]byte(`{"schema": "rdmarun.report/v4", "runs": [{"result": {"latency": {"buckets": [[1, 2]]}}}]}`))
	f.Add([]byte(`{"schema": 4}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Parse("f.json", data)
		if err != nil {
			return
		}
		if _, err := Reports(rep, rep, "a", "b", Options{MinEffect: 0.05, Confidence: 0.95, Resamples: 100, Seed: 1}); err != nil {
			t.Fatal(err)
		}
	})
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

// TestWriters: the JSON of a comparison with every verdict matches
// schema.json, and the JUnit and HTML match their golden files.
func TestWriters(t *testing.T) {
	base, next := reportOf(1, 1, 1, "lat", "gone", "dev"), reportOf(2, 1.2, 1, "lat", "new", "dev")
	next.Runs[2].Result.Requester.Device = "mlx5_0" // case dev
	c, err := Reports(base, next, "base.json", "new.json", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	schema := schematest.Compile(t, "schema.json")
	var js bytes.Buffer
	if err := JSON(&js, c); err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(t, schema, js.Bytes()); err != nil {
		t.Errorf("the comparison's JSON does not match schema.json: %v", err)
	}
	for _, w := range []struct {
		name  string
		write func(io.Writer, *Comparison) error
	}{{"compare.junit.xml", JUnit}, {"compare.html", HTML}} {
		var b bytes.Buffer
		if err := w.write(&b, c); err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("testdata", w.name), b.Bytes())
	}
}

// fleetReportOf is a 4-host all-pairs fleet report of one latency case,
// each pair's RTT scaled by slow(a, b).
func fleetReportOf(seed uint64, slow func(a, b int) float64) *report.Report {
	gen := rand.New(rand.NewPCG(seed, 13))
	rep := &report.Report{Schema: report.Schema, Scenario: "fleet", Fleet: &report.Fleet{}}
	for i := range 4 {
		rep.Fleet.Hosts = append(rep.Fleet.Hosts, fleet.Host{Name: fmt.Sprintf("h%d", i)})
	}
	spec, _ := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Size: 64}.Complete()
	for a := range 4 {
		for b := range 4 {
			if a == b {
				continue
			}
			res := runOf(gen, unimodal, 1000, slow(a, b))
			res.Requester, res.Responder = rdma.EndpointInfo{Device: "rxe" + fmt.Sprint(a)}, rdma.EndpointInfo{Device: "rxe" + fmt.Sprint(b)}
			rep.Runs = append(rep.Runs, report.Run{Case: "lat", Status: report.Passed, Spec: spec, Result: res,
				Pair: &report.PairRun{A: fmt.Sprintf("h%d", a), B: fmt.Sprintf("h%d", b), Pair: fleet.Pair{A: fleet.NIC{Host: a}, B: fleet.NIC{Host: b}}}})
		}
	}
	return rep
}

// TestFleetSuspects: pairs that regressed are blamed as a fleet blames
// bad pairs: one slow path is a link, a host slow with every partner is
// the host, and a quiet fleet names nothing.
func TestFleetSuspects(t *testing.T) {
	none := func(a, b int) float64 { return 1 }
	for _, tc := range []struct {
		name string
		slow func(a, b int) float64
		want []string
	}{
		{"quiet", none, nil},
		{"one path", func(a, b int) float64 {
			if a+b == 1 { // h0 -> h1 and h1 -> h0
				return 3
			}
			return 1
		}, []string{"link h0 <-> h1"}},
		{"one host", func(a, b int) float64 {
			if a == 2 || b == 2 {
				return 3
			}
			return 1
		}, []string{"host h2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Reports(fleetReportOf(1, none), fleetReportOf(2, tc.slow), "base.json", "new.json", DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range c.Suspects {
				got = append(got, s.Kind+" "+s.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("suspects %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFleetSuspectsWritten: the suspects reach the text and match the
// JSON schema.
func TestFleetSuspectsWritten(t *testing.T) {
	slow := func(a, b int) float64 {
		if a+b == 1 {
			return 3
		}
		return 1
	}
	c, err := Reports(fleetReportOf(1, func(int, int) float64 { return 1 }), fleetReportOf(2, slow), "base.json", "new.json", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := Text(&text, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "suspects (what the regressed pairs blame):\n  1. link h0 <-> h1: h0 -> h1 lat write latency 64 B qps=1 busy_poll: failed") {
		t.Errorf("text lacks the suspect:\n%s", text.String())
	}
	if err := JSON(&js, c); err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(t, schematest.Compile(t, "schema.json"), js.Bytes()); err != nil {
		t.Error(err)
	}
}
