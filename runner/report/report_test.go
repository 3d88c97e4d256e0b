package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
)

// fixture is a hand-made report covering every status and both measures.
// Its numbers are invented for the layout tests; nothing here was measured.
func fixture() *Report {
	complete := func(s rdma.TestSpec) rdma.Test {
		c, err := s.Complete()
		if err != nil {
			panic(err)
		}
		return c
	}
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	lat := func(size int, p50, p99 float64) *rdma.Result {
		s := rdma.Summary{Count: 1000, Min: p50 * 0.8, Max: p99 * 2, Mean: p50 * 1.1, Stddev: p50 / 10, P50: p50, P90: p50 * 1.2, P99: p99, P999: p99 * 1.5, P9999: p99 * 1.9}
		half := s.Half()
		return &rdma.Result{
			Spec:      complete(rdma.TestSpec{Op: rdma.OpWrite, Size: size, QP: rdma.QPSettings{MTU: new(1024)}}),
			Requester: rdma.EndpointInfo{Device: "rxe1"}, Responder: rdma.EndpointInfo{Device: "rxe0"},
			Latency: &rdma.LatencyStats{RTT: s, OneWay: &half, Buckets: []rdma.Bucket{{Ns: int64(s.Min), Count: 500}, {Ns: int64(p50), Count: 490}, {Ns: int64(p99), Count: 10}}},
		}
	}
	bw := func(size int, bps float64) *rdma.Result {
		d := rdma.Direction{From: "rxe1", To: "rxe0", Messages: 100, Bytes: uint64(100 * size), Seconds: 1, BytesPerSecond: bps, MessagesPerSec: bps / float64(size)}
		return &rdma.Result{
			Spec:      complete(rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: size, QP: rdma.QPSettings{MTU: new(1024)}}),
			Requester: rdma.EndpointInfo{Device: "rxe1"}, Responder: rdma.EndpointInfo{Device: "rxe0"},
			Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{d}, PerQP: [][]rdma.Direction{{d}}},
		}
	}
	// The sides' counters as soft-RoCE over veth reports them: transport
	// categories, no congestion or pause counters.
	rxe := func(device, netdev string, retries, seqErrs uint64) rdma.SideSummary {
		return rdma.SideSummary{Device: device, Counters: portstats.Deltas{Categories: portstats.Categorize(portstats.Source{
			Driver: "rdma_rxe", Netdev: netdev, // veth has no device, so no driver link
			HWCounters: map[string]uint64{"completer_retry_err": retries, "rcvd_seq_err": seqErrs},
		})}}
	}
	withSides := func(res *rdma.Result, sides ...rdma.SideSummary) *rdma.Result {
		res.Sides = sides
		return res
	}
	// An older responder sends no categories.
	old := rxe("rxe0", "veth0", 0, 0)
	old.Counters.Categories = nil
	spec := func(m rdma.Measure, size, qps int, mode rdma.Mode) rdma.Test {
		return complete(rdma.TestSpec{Op: rdma.OpWrite, Measure: m, Size: size, QPs: qps, Mode: mode, Iterations: 1000})
	}
	// Two QPs connected through the CM, times as the requester took them.
	cmSpec := complete(rdma.TestSpec{Op: rdma.OpWrite, Size: 2, QPs: 2, Connect: rdma.ConnectCM, Iterations: 1000})
	cmRun := lat(2, 40000, 90000)
	cmRun.Spec = cmSpec
	cmRun.Connect = rdma.NewConnectStats([]rdma.CMTimes{
		{ResolveAddr: 120 * time.Microsecond, ResolveRoute: 80 * time.Microsecond, Connect: 1800 * time.Microsecond},
		{ResolveAddr: 90 * time.Microsecond, ResolveRoute: 60 * time.Microsecond, Connect: 2400 * time.Microsecond},
	}, 4600*time.Microsecond, 1)
	// A measure connect run: four QPs, two connecting at once.
	connSpec := complete(rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureConnect, QPs: 4, Connect: rdma.ConnectCM, ConnectParallel: 2})
	var connTimes []rdma.CMTimes
	for i := range 4 {
		connTimes = append(connTimes, rdma.CMTimes{ResolveAddr: time.Duration(100+10*i) * time.Microsecond, ResolveRoute: 70 * time.Microsecond, Connect: time.Duration(1500+300*i) * time.Microsecond})
	}
	connRun := &rdma.Result{Spec: connSpec, Requester: cmRun.Requester, Responder: cmRun.Responder, Sides: []rdma.SideSummary{},
		Connect: rdma.NewConnectStats(connTimes, 4*time.Millisecond, 2)}
	connRun.Elapsed = connRun.Connect.Elapsed
	r := &Report{
		Schema: Schema, Tool: "rdmarun test", Scenario: "fixture", File: "scenarios/fixture.yaml", Peer: "loopback",
		Started: start, Finished: start.Add(42 * time.Second),
		Runs: []Run{
			{Case: "write-latency", Index: 0, Status: Passed, Spec: spec(rdma.MeasureLatency, 2, 1, rdma.ModeBusyPoll),
				Result: withSides(lat(2, 40000, 90000), rxe("rxe1", "veth1", 0, 2), rxe("rxe0", "veth0", 0, 0)), Seconds: 1.5,
				Verdicts: []Verdict{{Expr: "p99 < 100us", Passed: true, Values: map[string]float64{"p99": 90}}}},
			{Case: "write-latency", Index: 1, Status: Failed, Spec: spec(rdma.MeasureLatency, 4096, 1, rdma.ModeBusyPoll),
				Result: withSides(lat(4096, 300000, 900000), rxe("rxe1", "veth1", 1, 3), old), Seconds: 2,
				Verdicts: []Verdict{
					{Expr: "p99 < 100us", Passed: false, Values: map[string]float64{"p99": 900}},
					{Expr: "pause_rx == 0", Passed: false, Error: `threshold "pause_rx == 0": pause_rx: not reported by the requester (rxe1): no pause counters known for netdev veth1 (driver unknown); not reported by the responder (rxe0): no counter categories from this side (its counters were not read, or it runs an older rdmarun)`},
				}},
			{Case: "write-bw", Index: 2, Status: Passed, Spec: spec(rdma.MeasureBandwidth, 4096, 1, rdma.ModeEvent), Result: bw(4096, 2e7), Seconds: 3},
			{Case: "write-bw", Index: 3, Status: Errored, Spec: spec(rdma.MeasureBandwidth, 65536, 4, rdma.ModeEvent), Error: "completion error RETRY_EXC_ERR (status 12) on rxe1", Seconds: 4},
			{Case: "write-bw", Index: 4, Status: Skipped, Spec: spec(rdma.MeasureBandwidth, 1<<20, 4, rdma.ModeEvent)},
			{Case: "write-cm", Index: 5, Status: Passed, Spec: cmSpec, Result: cmRun, Seconds: 1,
				Verdicts: []Verdict{{Expr: "connect_p99 < 5ms", Passed: true, Values: map[string]float64{"connect_p99": 2400}}}},
			{Case: "cm-connect", Index: 0, Status: Passed, Spec: connSpec, Result: connRun, Seconds: 0.5,
				Verdicts: []Verdict{{Expr: "connect_rate > 500", Passed: true, Values: map[string]float64{"connect_rate": 1000}}}},
		},
		Stopped: "abort_on_fail in case write-bw", StopReason: StopAbortOnFail,
		Doctor: []DoctorEnd{
			NewDoctorEnd("local", doctor.Report{Devices: []string{"rxe1"}, Checks: []doctor.Check{
				{Name: "limits.memlock", Status: doctor.OK, Expected: "at least 64 MiB", Found: "unlimited"},
				{Name: "cpu.governor", Status: doctor.Warn, Expected: "performance", Found: "powersave", Fix: "cpupower frequency-set -g performance"},
				{Name: "pcie.width", Device: "rxe1", Status: doctor.NotApplicable, Expected: "x16", Found: "software device"},
				{Name: "mtu.peer", Device: "rxe1", Port: 1, Status: doctor.Fail, Expected: "the far end's active MTU and netdev MTU equal to this port's",
					Found: "this end active MTU 512, veth1 MTU 1000, h:1's rxe0/1 active MTU 1024, veth0 MTU 1500", Cost: "frames larger than 1000 B are dropped", Fix: "set the same netdev MTU on both ends"},
				{Name: "roce.pfc", Device: "rxe1", Port: 1, Status: doctor.CannotTell, Expected: "PFC on the RoCE priority", Found: "needs DCB netlink"},
			}}),
			DoctorEndError("h:1", errors.New("the responder at h:1 is older than the doctor request; upgrade it")),
		},
	}
	r.Tally()
	return r
}

func TestWriters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer, *Report) error
	}{
		{"report.txt", func(b *bytes.Buffer, r *Report) error { return Text(b, r) }},
		{"report.compact.txt", func(b *bytes.Buffer, r *Report) error { return Compact(b, r) }},
		{"report.verbose.txt", func(b *bytes.Buffer, r *Report) error { return TextOptions{Verbose: true}.Text(b, r) }},
		{"report.compact.verbose.txt", func(b *bytes.Buffer, r *Report) error { return TextOptions{Verbose: true}.Compact(b, r) }},
		{"report.json", func(b *bytes.Buffer, r *Report) error { return JSON(b, r) }},
		{"report.junit.xml", func(b *bytes.Buffer, r *Report) error { return JUnit(b, r) }},
		{"report.html", func(b *bytes.Buffer, r *Report) error { return HTML(b, r) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, fixture()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.name, b.Bytes())
		})
	}
}

func TestSummary(t *testing.T) {
	s := fixture().Summary
	if s != (Summary{Runs: 7, Passed: 4, Failed: 1, Errors: 1, Skipped: 1}) {
		t.Errorf("summary %+v", s)
	}
}

// TestJUnitParses reads the XML back as JUnit and checks the counts and
// that a failure quotes the threshold and the value.
func TestJUnitParses(t *testing.T) {
	var b bytes.Buffer
	if err := JUnit(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if got.Tests != 7 || got.Failures != 1 || got.Errors != 1 || got.Skipped != 1 || len(got.Suites) != 4 {
		t.Errorf("totals %+v", got)
	}
	f := got.Suites[0].Cases[1].Failure
	if f == nil || !strings.Contains(f.Message, "p99 < 100us with p99=900") {
		t.Errorf("failure %+v", f)
	}
	// The failing testcase, and only it, carries both ends' findings.
	if out := got.Suites[0].Cases[1].SystemOut; !strings.Contains(out, "fail mtu.peer (rxe1/1)") || !strings.Contains(out, "h:1: the doctor could not be asked") {
		t.Errorf("the failing testcase's system-out: %q", out)
	}
	if out := got.Suites[0].Cases[0].SystemOut; out != "" {
		t.Errorf("a passing testcase carries the doctor: %q", out)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != Schema || len(back.Runs) != 7 || back.Runs[1].Verdicts[0].Values["p99"] != 900 || back.Runs[0].Result.Latency.OneWay.P50 != 20000 ||
		back.Runs[5].Result.Connect == nil || back.Runs[5].Result.Connect.Connect.P99 != 2.4e6 || len(back.Runs[5].Result.Connect.QPs) != 2 || back.Runs[5].Spec.Connect != rdma.ConnectCM ||
		back.Runs[6].Spec.Measure != rdma.MeasureConnect || back.Runs[6].Spec.ConnectParallel != 2 || back.Runs[6].Result.Connect.PerSecond != 1000 {
		t.Errorf("round trip lost data: %+v", back)
	}
}

func TestHTMLCharts(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if n := strings.Count(html, `<svg class="chart"`); n != 3 {
		t.Errorf("%d charts, want 3 (latency for two cases, bandwidth for the third)", n)
	}
	if !strings.Contains(html, "<caption>Connection set-up through rdma_cm") || !strings.Contains(html, "<td>2400.00</td>") {
		t.Error("the page lacks the CM set-up table of case write-cm")
	}
	for _, s := range []string{"<script", "http://", "https://"} {
		if strings.Contains(html, s) {
			t.Errorf("the page contains %q; it must be self-contained", s)
		}
	}
}
