package exposition

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The benchmarks below hold the engine against client_golang on the
// exporter's own shape of metrics, for the decision in doc.go: each key
// (a target probed with one size) has the 13 series the exporter's Init
// gives it, with the exporter's 7 labels, and one probe's worth of
// values. A target has two keys (two sizes).

type benchKey struct {
	Source, Device, Target, Op, Mode string
	Port, Size                       int
}

func (k benchKey) values() []string {
	return []string{k.Source, k.Device, strconv.Itoa(k.Port), k.Target, k.Op, strconv.Itoa(k.Size), k.Mode}
}

var benchLabels = []string{"source", "device", "port", "target", "op", "size_bytes", "mode"}

const (
	bLatency = iota
	bCompErrs
	bTimeouts
	bSuccess
	bLastOK
	bDuration
	bProbes
	bConnections
)

var benchFamilies = []Family{
	bLatency:     {Name: "rdma_probe_latency_seconds", Help: "Round-trip time of RDMA probe operations, in seconds.", Kind: KindHistogram, Buckets: testBuckets},
	bCompErrs:    {Name: "rdma_probe_completion_errors_total", Help: "Probes that ended with a work completion error, by completion status.", Kind: KindCounter, Label: "status"},
	bTimeouts:    {Name: "rdma_probe_timeouts_total", Help: "Probes that ended because the peer did not answer in time.", Kind: KindCounter},
	bSuccess:     {Name: "rdma_probe_success", Help: "Whether the last probe succeeded (1) or not (0).", Kind: KindGauge},
	bLastOK:      {Name: "rdma_probe_last_success_timestamp_seconds", Help: "When the last successful probe ended, in seconds since the epoch.", Kind: KindGauge},
	bDuration:    {Name: "rdma_probe_duration_seconds", Help: "How long the last probe took, setup included, in seconds.", Kind: KindGauge},
	bProbes:      {Name: "rdma_probes_total", Help: "Probes run, by result.", Kind: KindCounter, Label: "result"},
	bConnections: {Name: "rdma_probe_connections_total", Help: "Connections opened to the target.", Kind: KindCounter},
}

var (
	benchStatuses = []string{"RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR"}
	benchResults  = []string{"success", "completion_error", "timeout", "port_down", "error"}
	// benchSamples are one probe's round trips, in seconds.
	benchSamples = []float64{2e-6, 3e-6, 5e-6, 9e-6, 40e-6}
)

func benchKeys(targets int) []benchKey {
	keys := make([]benchKey, 0, 2*targets)
	for i := range targets {
		for _, size := range []int{2, 4096} {
			keys = append(keys, benchKey{Source: "node-a", Device: "mlx5_0", Port: 1, Target: fmt.Sprintf("10.1.%d.%d:18520", i/250, i%250), Op: "write", Size: size, Mode: "event"})
		}
	}
	return keys
}

// engineInit creates k's series at 0, as the exporter's Init does.
func engineInit(s *Set[benchKey], k benchKey) {
	s.Update(k, func(u Series) {
		u.Histogram(bLatency)
		for _, st := range benchStatuses {
			u.AddLabelled(bCompErrs, st, 0)
		}
		u.Add(bTimeouts, 0)
		u.Add(bConnections, 0)
		for _, r := range benchResults {
			u.AddLabelled(bProbes, r, 0)
		}
	})
}

// engineProbe files one successful probe of k, as the exporter's Record
// does.
func engineProbe(s *Set[benchKey], k benchKey, now time.Time) {
	var h *Histogram
	s.Update(k, func(u Series) {
		u.Set(bDuration, 0.003)
		u.Set(bSuccess, 1)
		u.Set(bLastOK, float64(now.UnixNano())/1e9)
		u.AddLabelled(bProbes, "success", 1)
		h = u.Histogram(bLatency)
	})
	for _, v := range benchSamples {
		h.Observe(v, 1, now)
	}
}

// vecs are the same families as client_golang vectors.
type vecs struct {
	latency                   *prometheus.HistogramVec
	compErrs, probes          *prometheus.CounterVec
	timeouts, connections     *prometheus.CounterVec
	success, lastOK, duration *prometheus.GaugeVec
	reg                       *prometheus.Registry
}

func newVecs() *vecs {
	opts := func(f int) (string, string) { return benchFamilies[f].Name, benchFamilies[f].Help }
	counter := func(f int, extra ...string) *prometheus.CounterVec {
		name, help := opts(f)
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(benchLabels[:len(benchLabels):len(benchLabels)], extra...))
	}
	gauge := func(f int) *prometheus.GaugeVec {
		name, help := opts(f)
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, benchLabels)
	}
	name, help := opts(bLatency)
	v := &vecs{
		// The options the engine's histograms copy (histogram.go).
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: testBuckets,
			NativeHistogramBucketFactor: 1.05, NativeHistogramMaxBucketNumber: nativeMaxBuckets, NativeHistogramMinResetDuration: nativeMinResetPeriod}, benchLabels),
		compErrs: counter(bCompErrs, "status"), probes: counter(bProbes, "result"),
		timeouts: counter(bTimeouts), connections: counter(bConnections),
		success: gauge(bSuccess), lastOK: gauge(bLastOK), duration: gauge(bDuration),
		reg: prometheus.NewRegistry(),
	}
	v.reg.MustRegister(v.latency, v.compErrs, v.probes, v.timeouts, v.connections, v.success, v.lastOK, v.duration)
	return v
}

// children are one key's series in the vectors, looked up once, as a
// port of the exporter to client_golang would keep them per job.
type children struct {
	latency                   prometheus.Observer
	success, lastOK, duration prometheus.Gauge
	probesOK                  prometheus.Counter
}

// init creates k's series at 0, as the exporter's Init does.
func (v *vecs) init(k benchKey) children {
	lvs := k.values()
	for _, st := range benchStatuses {
		v.compErrs.WithLabelValues(append(lvs[:len(lvs):len(lvs)], st)...).Add(0)
	}
	v.timeouts.WithLabelValues(lvs...).Add(0)
	v.connections.WithLabelValues(lvs...).Add(0)
	for _, r := range benchResults {
		v.probes.WithLabelValues(append(lvs[:len(lvs):len(lvs)], r)...).Add(0)
	}
	return children{latency: v.latency.WithLabelValues(lvs...), success: v.success.WithLabelValues(lvs...),
		lastOK: v.lastOK.WithLabelValues(lvs...), duration: v.duration.WithLabelValues(lvs...),
		probesOK: v.probes.WithLabelValues(append(lvs[:len(lvs):len(lvs)], "success")...)}
}

// probe files one successful probe in c.
func (c children) probe(now time.Time) {
	c.duration.Set(0.003)
	c.success.Set(1)
	c.lastOK.Set(float64(now.UnixNano()) / 1e9)
	c.probesOK.Inc()
	for _, s := range benchSamples {
		c.latency.Observe(s)
	}
}

// benchServer is one side's /metrics with every key probed once, and
// the heap its series hold per key.
func benchServer(b *testing.B, clientGolang bool, keys []benchKey) (http.Handler, float64) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	now := time.Now()
	var h http.Handler
	if clientGolang {
		v := newVecs()
		for _, k := range keys {
			v.init(k).probe(now)
		}
		h = promhttp.HandlerFor(v.reg, promhttp.HandlerOpts{})
	} else {
		eh := NewHandler(prometheus.NewRegistry())
		s, err := New(Labels[benchKey]{Names: benchLabels, Values: benchKey.values, PerKey: []string{"target"}}, benchFamilies)
		if err != nil {
			b.Fatal(err)
		}
		eh.MustRegister(s)
		for _, k := range keys {
			engineInit(s, k)
			engineProbe(s, k, now)
		}
		h = eh
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.Cleanup(func() { runtime.KeepAlive(h) })
	return h, float64(after.HeapAlloc-before.HeapAlloc) / float64(len(keys))
}

// discard is a ResponseWriter that counts the body and keeps none of it,
// as a connection writes it out in chunks.
type discard struct {
	header http.Header
	n      int
}

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// BenchmarkVsClientGolang: an op is one scrape of /metrics (gathering and
// encoding every series) of 100 or 1,000 targets x 2 keys, through the
// engine (engine/) or through client_golang's vectors and promhttp
// (client_golang/), in text (no Accept), text gzipped, and protobuf
// (what Prometheus asks for to ingest native histograms) gzipped or not.
// body-B is the response's size; heap-B/key what the series hold.
func BenchmarkVsClientGolang(b *testing.B) {
	for _, format := range []struct {
		name    string
		headers map[string]string
	}{
		{name: "text"},
		{name: "text-gzip", headers: map[string]string{"Accept-Encoding": "gzip"}},
		{name: "protobuf", headers: map[string]string{"Accept": acceptProtobuf}},
		{name: "protobuf-gzip", headers: map[string]string{"Accept": acceptNativeHists, "Accept-Encoding": "gzip"}},
	} {
		for _, targets := range []int{100, 1000} {
			for _, side := range []string{"engine", "client_golang"} {
				b.Run(fmt.Sprintf("%s/targets=%d/%s", format.name, targets, side), func(b *testing.B) {
					h, heap := benchServer(b, side == "client_golang", benchKeys(targets))
					req := httptest.NewRequest("GET", "/metrics", nil)
					for k, v := range format.headers {
						req.Header.Set(k, v)
					}
					w := &discard{header: http.Header{}}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						w.n = 0
						clear(w.header)
						h.ServeHTTP(w, req)
					}
					b.ReportMetric(float64(w.n), "body-B")
					b.ReportMetric(heap, "heap-B/key")
				})
			}
		}
	}
}

// BenchmarkRecordVsClientGolang: an op is one probe of every key of
// 1,000 targets x 2 filed as the exporter files it (the last probe's
// state, five samples), in the engine (by key, as Record does) or in
// client_golang's vectors through children looked up once per key: the
// cost a probe round adds, scrapes aside.
func BenchmarkRecordVsClientGolang(b *testing.B) {
	keys := benchKeys(1000)
	now := time.Now()
	b.Run("engine", func(b *testing.B) {
		s, err := New(Labels[benchKey]{Names: benchLabels, Values: benchKey.values, PerKey: []string{"target"}}, benchFamilies)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			engineInit(s, k)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			for _, k := range keys {
				engineProbe(s, k, now)
			}
		}
	})
	b.Run("client_golang", func(b *testing.B) {
		v := newVecs()
		cs := make([]children, len(keys))
		for i, k := range keys {
			cs[i] = v.init(k)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			for _, c := range cs {
				c.probe(now)
			}
		}
	})
}
