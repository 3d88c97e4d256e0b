package prober

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/exposition"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

var key = Key{Source: "node-b", Device: "rxe1", Port: 1, Target: "10.0.0.1:18520", Op: rdma.OpWrite, Size: 2, Mode: rdma.ModeEvent}

// latencyResult is a result whose histogram holds the given samples (ns).
func latencyResult(samples ...int64) *rdma.Result {
	l := &rdma.LatencyStats{}
	for _, s := range samples {
		l.Buckets = append(l.Buckets, rdma.Bucket{Ns: s, Count: 1})
	}
	return &rdma.Result{Latency: l}
}

func TestProbeSuccess(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Init(key, false)
	var tr RunFunc = func(context.Context, Peer, rdma.Test) (*rdma.Result, error) {
		return latencyResult(1500, 1600, 25000), nil
	}
	if err := ProbeRDMA(context.Background(), tr, m, key, Peer{Addr: key.Target}, complete(rdma.TestSpec{Op: rdma.OpWrite}), time.Second); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP rdma_probe_success Whether the last probe succeeded (1) or not (0).
# TYPE rdma_probe_success gauge
rdma_probe_success{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 1
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "rdma_probe_success"); err != nil {
		t.Error(err)
	}
	if h := testutil.ToFloat64(read(m, famProbes, append(key.values(), "success")...)); h != 1 {
		t.Errorf("success count %v", h)
	}
	// Three samples: two at or below 2 us, one at or below 32 us.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "rdma_probe_latency_seconds" {
			continue
		}
		hist := mf.GetMetric()[0].GetHistogram()
		if hist.GetSampleCount() != 3 {
			t.Errorf("%d samples, want 3", hist.GetSampleCount())
		}
		for _, b := range hist.GetBucket() {
			switch b.GetUpperBound() {
			case 2e-6:
				if b.GetCumulativeCount() != 2 {
					t.Errorf("le=2us holds %d, want 2", b.GetCumulativeCount())
				}
			case 32e-6:
				if b.GetCumulativeCount() != 3 {
					t.Errorf("le=32us holds %d, want 3", b.GetCumulativeCount())
				}
			}
		}
	}
	if n := testutil.CollectAndCount(reg, "rdma_probe_latency_seconds"); n != 1 {
		t.Errorf("%d latency series", n)
	}
	if problems, err := testutil.CollectAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

func TestProbeFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		delay  time.Duration
		result string
		status string
	}{
		{name: "retry exceeded", err: &rdma.CompletionError{Status: rdma.WCRetryExcErr}, result: "completion_error", status: "RETRY_EXC_ERR"},
		{name: "remote access", err: fmt.Errorf("wrapped: %w", &rdma.CompletionError{Status: rdma.WCRemAccessErr}), result: "completion_error", status: "REM_ACCESS_ERR"},
		{name: "stall", err: &rdma.StallError{}, result: "timeout"},
		{name: "deadline", delay: time.Second, result: "timeout"},
		{name: "QP connect timed out", err: &rdma.VerbsError{Op: "ibv_modify_qp(RTR)", Device: "rxe0", Errno: syscall.ETIMEDOUT}, result: "timeout"},
		{name: "port down", err: fmt.Errorf("setup: %w", &rdma.PortDownError{Device: "rxe0", Port: 1, State: "DOWN"}), result: "port_down"},
		{name: "responder's QP connect timed out", err: &peer.Error{Addr: "10.0.0.1:18515", Stage: "exchanging endpoints",
			Err: &ctrl.RemoteError{Peer: "10.0.0.1:18515", Code: "timeout", Msg: "ibv_modify_qp(RTR) on rxe0: connection timed out (errno 110)"}}, result: "timeout"},
		{name: "responder's other failure", err: &peer.Error{Addr: "10.0.0.1:18515", Stage: "exchanging endpoints",
			Err: &ctrl.RemoteError{Peer: "10.0.0.1:18515", Msg: "no device mlx5_9"}}, result: "error"},
		{name: "responder's side stalled during the test", err: &peer.RemoteSideError{Msg: "stalled", Timeout: true}, result: "timeout"},
		{name: "other", err: errors.New("responder refused"), result: "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			m.Init(key, false)
			// The module decides the stall deadline (half its timeout);
			// the probe passes it on as it is.
			sent := complete(rdma.TestSpec{Op: rdma.OpWrite, StallTimeout: rdma.Duration(50 * time.Millisecond)})
			var tr RunFunc = func(ctx context.Context, _ Peer, spec rdma.Test) (*rdma.Result, error) {
				if !reflect.DeepEqual(spec, sent) {
					t.Errorf("transport got spec %+v, want the probe's %+v", spec, sent)
				}
				if tc.delay > 0 {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return nil, tc.err
			}
			start := time.Now()
			err := ProbeRDMA(context.Background(), tr, m, key, Peer{Addr: key.Target}, sent, 100*time.Millisecond)
			if err == nil {
				t.Fatal("no error")
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("probe took %v with a 100 ms timeout", took)
			}
			if v := testutil.ToFloat64(read(m, famSuccess, key.values()...)); v != 0 {
				t.Errorf("success %v", v)
			}
			if v := testutil.ToFloat64(read(m, famProbes, append(key.values(), tc.result)...)); v != 1 {
				t.Errorf("%s count %v", tc.result, v)
			}
			if tc.status != "" {
				if v := testutil.ToFloat64(read(m, famCompErrs, append(key.values(), tc.status)...)); v != 1 {
					t.Errorf("completion errors{status=%s} = %v", tc.status, v)
				}
			}
			if tc.result == "timeout" {
				if v := testutil.ToFloat64(read(m, famTimeouts, key.values()...)); v != 1 {
					t.Errorf("timeouts %v", v)
				}
			}
		})
	}
}

// TestInitCreatesSeries: every series a dashboard or alert reads exists
// at 0 before the first probe.
func TestInitCreatesSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Init(key, false)
	for name, want := range map[string]int{
		"rdma_probe_completion_errors_total": 2, // RETRY_EXC_ERR, RNR_RETRY_EXC_ERR
		"rdma_probe_timeouts_total":          1,
		"rdma_probe_success":                 1,
		"rdma_probes_total":                  5, // success, completion_error, timeout, port_down, error
		"rdma_probe_latency_seconds":         1,
	} {
		if n := testutil.CollectAndCount(reg, name); n != want {
			t.Errorf("%s: %d series, want %d", name, n, want)
		}
	}
}

func TestBandwidthRecorded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	k := key
	k.Size = 1 << 20
	m.Init(k, true)
	res := &rdma.Result{Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{{BytesPerSecond: 1.5e9}}}}
	m.Record(k, res, nil, time.Second, time.Unix(1700000000, 0))
	if v := testutil.ToFloat64(read(m, famBandwidth, k.values()...)); v != 1.5e9 {
		t.Errorf("bandwidth %v", v)
	}
	if v := testutil.ToFloat64(read(m, famLastOK, k.values()...)); v != 1700000000 {
		t.Errorf("last success %v", v)
	}
}

// benchTargets creates the long-lived series of n targets, as the
// exporter does at start, and reports the heap they hold.
// The metrics are registered on an exposition.Handler, as the exporter
// does.
func benchTargets(b *testing.B, n int) (h *exposition.Handler, m *Metrics, keys []Key, heapPerTarget float64) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h = exposition.NewHandler(prometheus.NewRegistry())
	m = NewMetrics(h)
	keys = make([]Key, n)
	for i := range keys {
		keys[i] = key
		keys[i].Target = fmt.Sprintf("10.1.%d.%d:18520", i/250, i%250)
		m.Init(keys[i], false)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return h, m, keys, float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProbeRound probes 1,000 targets once each through a fake
// transport that returns 100 latency samples: the cost of the metrics
// side of one probe round over the fleet (an op is a round).
func BenchmarkProbeRound(b *testing.B) {
	_, m, keys, heap := benchTargets(b, 1000)
	samples := make([]int64, 100)
	for i := range samples {
		samples[i] = int64(2000 + i*37)
	}
	res := latencyResult(samples...)
	var tr RunFunc = func(context.Context, Peer, rdma.Test) (*rdma.Result, error) { return res, nil }
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		for _, k := range keys {
			_ = ProbeRDMA(context.Background(), tr, m, k, Peer{Addr: k.Target}, complete(rdma.TestSpec{Op: rdma.OpWrite}), time.Second)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(heap, "heap-B/target")
}

// The Accept headers of a scrape: Prometheus' own, with the default
// scrape protocols and with those it uses to ingest native histograms.
const (
	acceptProtobuf    = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	acceptPrometheus  = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"
	acceptNativeHists = acceptProtobuf + ";q=0.6," + acceptPrometheus
)

// BenchmarkScrape serves /metrics for 32 probed targets (a node's share
// of a mesh with max_targets: 32) and for 1,000 (every peer of a large
// fleet), as Prometheus would scrape it: gathering and encoding every
// series (an op is a scrape). Sub-benchmarks: the text format the
// request gets with no Accept header; gzip, which Prometheus always
// offers (body-B is then what goes on the wire); protobuf, which
// Prometheus asks for when it ingests native histograms; and
// Prometheus' own requests (prometheus: its default Accept and gzip;
// prometheus-native: protobuf first, and gzip). The registry/ ones
// serve the same series through client_golang's registry and promhttp,
// as the exporter did before exposition.Handler, for comparison.
func BenchmarkScrape(b *testing.B) {
	for _, path := range []string{"", "registry/"} {
		for _, tc := range []struct {
			name    string
			targets []int
			headers map[string]string
		}{
			{name: "", targets: []int{32, 1000}},
			{name: "gzip/", targets: []int{32, 1000}, headers: map[string]string{"Accept-Encoding": "gzip"}},
			{name: "protobuf/", targets: []int{1000}, headers: map[string]string{"Accept": acceptProtobuf}},
			{name: "prometheus/", targets: []int{1000}, headers: map[string]string{"Accept": acceptPrometheus, "Accept-Encoding": "gzip"}},
			{name: "prometheus-native/", targets: []int{1000}, headers: map[string]string{"Accept": acceptNativeHists, "Accept-Encoding": "gzip"}},
		} {
			for _, n := range tc.targets {
				b.Run(fmt.Sprintf("%s%stargets=%d", path, tc.name, n), func(b *testing.B) {
					benchmarkScrape(b, n, path == "registry/", tc.headers)
				})
			}
		}
	}
}

// discardResponse is a ResponseWriter that counts the body and keeps
// none of it. httptest.ResponseRecorder would grow a buffer to the whole
// body on every scrape, which is most of the bytes allocated at 1,000
// targets and none of the exporter's: a real connection writes the body
// out in chunks.
type discardResponse struct {
	header http.Header
	n      int
}

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) WriteHeader(int)             {}
func (d *discardResponse) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

func benchmarkScrape(b *testing.B, targets int, registry bool, headers map[string]string) {
	sh, m, keys, heap := benchTargets(b, targets)
	res := latencyResult(2000, 3000, 5000, 9000, 40000)
	var tr RunFunc = func(context.Context, Peer, rdma.Test) (*rdma.Result, error) { return res, nil }
	for _, k := range keys {
		_ = ProbeRDMA(context.Background(), tr, m, k, Peer{Addr: k.Target}, complete(rdma.TestSpec{Op: rdma.OpWrite}), time.Second)
	}
	var h http.Handler = sh
	if registry {
		reg := prometheus.NewRegistry()
		reg.MustRegister(m.set)
		h = promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	}
	req := httptest.NewRequest("GET", "/metrics", nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := &discardResponse{header: http.Header{}}
	var size int
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		w.n = 0
		clear(w.header)
		h.ServeHTTP(w, req)
		size = w.n
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(size), "body-B")
	b.ReportMetric(heap, "heap-B/target")
}

// slowSettleLink fails its probe at once and then takes settle to free
// the connection, as rxe takes seconds to destroy the QPs of a session
// whose link went down.
type slowSettleLink struct {
	settle  time.Duration
	m       *Metrics
	atStart float64 // the duration gauge when Settle began
	settled bool
}

func (l *slowSettleLink) Probe(context.Context) (*rdma.Result, time.Duration, error) {
	return nil, 0, &rdma.CompletionError{Status: rdma.WCRetryExcErr}
}

func (l *slowSettleLink) Settle() {
	l.atStart = testutil.ToFloat64(read(l.m, famDuration, key.values()...))
	time.Sleep(l.settle)
	l.settled = true
}

func (l *slowSettleLink) Close() {}

// TestProbeDurationLeavesOutTeardown: a failed probe's duration is the
// time to its outcome; freeing the broken connection afterwards is not
// the probe's (in the testbed it took rxe up to 2.5 s, and a probe that
// failed in 0.6 s was recorded as 3.1 s, past its 2.5 s timeout). The
// link is still settled before ProbeLink returns, so the next probe
// starts clean.
func TestProbeDurationLeavesOutTeardown(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.Init(key, false)
	l := &slowSettleLink{settle: 300 * time.Millisecond, m: m}
	took, err := ProbeLink(context.Background(), l, m, key, time.Second)
	if err == nil {
		t.Fatal("no error")
	}
	if !l.settled {
		t.Fatal("ProbeLink returned before the link was settled")
	}
	if l.atStart <= 0 {
		t.Errorf("the duration was not recorded before Settle (gauge %v)", l.atStart)
	}
	got := testutil.ToFloat64(read(m, famDuration, key.values()...))
	if got >= l.settle.Seconds() || took >= l.settle {
		t.Errorf("probe duration %v s (took %v) includes the %v teardown", got, took, l.settle)
	}
}

// lateLink's probe returns late past its context's end, as a run whose
// worker is held in a verbs call does.
type lateLink struct {
	late          time.Duration
	returned      bool
	settledBefore bool // Settle came before the probe returned
}

func (l *lateLink) Probe(ctx context.Context) (*rdma.Result, time.Duration, error) {
	<-ctx.Done()
	time.Sleep(l.late)
	l.returned = true
	return nil, 0, ctx.Err()
}

func (l *lateLink) Settle() { l.settledBefore = !l.returned }

func (l *lateLink) Close() {}

// TestProbeRecordedAtItsDeadline: a probe that returns long after its
// deadline is recorded as a timeout by the deadline and a grace, and
// ProbeLink waits for it, and settles the link after it, before it
// returns.
func TestProbeRecordedAtItsDeadline(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.Init(key, false)
	l := &lateLink{late: time.Second}
	const timeout = 100 * time.Millisecond
	start := time.Now()
	took, err := ProbeLink(context.Background(), l, m, key, timeout)
	if !errors.Is(err, errTimeout) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if !l.returned || l.settledBefore {
		t.Errorf("ProbeLink returned (%v) or settled the link before the probe returned", time.Since(start))
	}
	if took > timeout+returnGrace+100*time.Millisecond {
		t.Errorf("recorded %v for a probe with a %v timeout: the late return was counted", took, timeout)
	}
	if v := testutil.ToFloat64(read(m, famProbes, append(key.values(), "timeout")...)); v != 1 {
		t.Errorf("timeout count %v, want 1", v)
	}
}
