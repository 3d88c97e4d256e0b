package prober

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/rdmarun/rdmarun/rdma"
)

// read reads the one series of family f with these label values (the
// key's, then the status or result), for testutil.ToFloat64, as a
// client_golang vector's WithLabelValues does. Unlike a vector's, it
// creates nothing: a series that does not exist collects nothing, and
// ToFloat64 fails the test.
func read(m *Metrics, f int, lvs ...string) prometheus.Collector {
	return seriesReader{m: m, f: f, values: lvs}
}

type seriesReader struct {
	m      *Metrics
	f      int
	values []string
}

func (r seriesReader) Describe(ch chan<- *prometheus.Desc) { ch <- r.m.set.Desc(r.f) }

func (r seriesReader) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { r.m.set.Collect(all); close(all) }()
	names := labelNames
	if extra := families[r.f].Label; extra != "" {
		names = append(names[:len(names):len(names)], extra)
	}
	desc := r.m.set.Desc(r.f)
	for m := range all {
		if m.Desc() != desc {
			continue
		}
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			panic(err)
		}
		match := len(d.GetLabel()) == len(r.values)
		for _, lp := range d.GetLabel() {
			i := slices.Index(names, lp.GetName())
			match = match && i >= 0 && i < len(r.values) && r.values[i] == lp.GetValue()
		}
		if match {
			ch <- m
		}
	}
}

// seriesOf counts the gathered series whose labels are all of k's.
func seriesOf(t *testing.T, reg *prometheus.Registry, k Key) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v := k.values()
	n := 0
	for _, mf := range mfs {
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				for i, name := range labelNames {
					if lp.GetName() == name && lp.GetValue() != v[i] {
						continue metric
					}
				}
			}
			n++
		}
	}
	return n
}

// latencyCount is the sample count of k's latency histogram as reg
// gathers it; the test fails if k has none.
func latencyCount(t *testing.T, reg prometheus.Gatherer, k Key) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != families[famLatency].Name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if i := slices.Index(labelNames, lp.GetName()); lp.GetValue() != k.values()[i] {
					continue metric
				}
			}
			return m.GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no latency histogram for %+v", k)
	return 0
}

func TestForget(t *testing.T) {
	lat := key
	lat.Target = "gone"
	bw := lat
	bw.Size = 1 << 20
	other := key
	other.Target = "stays"
	all := []Key{lat, bw, other}
	// Init's series (latency or bandwidth, 2 completion statuses,
	// timeouts, success, last success, duration, connections, 5
	// results), plus those only a probe or a connection creates: a
	// completion status the alerts do not watch, and the set-up time.
	const latSeries, bwSeries = 1 + 2 + 1 + 1 + 1 + 1 + 1 + 5, 1 + 2 + 1 + 1 + 1 + 1 + 1 + 5
	for _, tc := range []struct {
		name   string
		forget []Key
		want   map[Key]int // series left per key
	}{
		{name: "nothing", want: map[Key]int{lat: latSeries + 2, bw: bwSeries + 1, other: latSeries}},
		{name: "one key", forget: []Key{lat}, want: map[Key]int{lat: 0, bw: bwSeries + 1, other: latSeries}},
		{name: "a whole target", forget: []Key{lat, bw}, want: map[Key]int{lat: 0, bw: 0, other: latSeries}},
		{name: "twice is harmless", forget: []Key{lat, lat}, want: map[Key]int{lat: 0, bw: bwSeries + 1, other: latSeries}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			m.Init(lat, false)
			m.Init(bw, true)
			m.Init(other, false)
			m.Record(lat, nil, &rdma.CompletionError{Status: rdma.WCRemAccessErr}, time.Millisecond, time.Now())
			m.RecordConnect(lat, 3*time.Millisecond)
			m.RecordConnect(bw, 4*time.Millisecond)
			for _, k := range tc.forget {
				m.Forget(k)
			}
			for _, k := range all {
				if got := seriesOf(t, reg, k); got != tc.want[k] {
					t.Errorf("%s size %d: %d series left, want %d", k.Target, k.Size, got, tc.want[k])
				}
			}
		})
	}
}

// TestRecordExposition: the exact series a success and a retry failure
// leave, Init's zeros included.
func TestRecordExposition(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.Init(key, false)
	m.Record(key, latencyResult(1500), nil, time.Millisecond, time.Unix(1700000000, 0))
	m.Record(key, nil, fmt.Errorf("probe: %w", &rdma.CompletionError{Status: rdma.WCRetryExcErr}), time.Millisecond, time.Unix(1700000015, 0))
	want := `
# HELP rdma_probe_completion_errors_total Probes that ended with a work completion error, by completion status (e.g. RETRY_EXC_ERR).
# TYPE rdma_probe_completion_errors_total counter
rdma_probe_completion_errors_total{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",status="RETRY_EXC_ERR",target="10.0.0.1:18520"} 1
rdma_probe_completion_errors_total{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",status="RNR_RETRY_EXC_ERR",target="10.0.0.1:18520"} 0
# HELP rdma_probe_last_success_timestamp_seconds When the last successful probe ended, in seconds since the epoch.
# TYPE rdma_probe_last_success_timestamp_seconds gauge
rdma_probe_last_success_timestamp_seconds{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 1.7e+09
# HELP rdma_probe_success Whether the last probe succeeded (1) or not (0).
# TYPE rdma_probe_success gauge
rdma_probe_success{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 0
# HELP rdma_probes_total Probes run, by result (success, completion_error, timeout, port_down, error).
# TYPE rdma_probes_total counter
rdma_probes_total{device="rxe1",mode="event",op="write",port="1",result="completion_error",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 1
rdma_probes_total{device="rxe1",mode="event",op="write",port="1",result="error",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 0
rdma_probes_total{device="rxe1",mode="event",op="write",port="1",result="port_down",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 0
rdma_probes_total{device="rxe1",mode="event",op="write",port="1",result="success",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 1
rdma_probes_total{device="rxe1",mode="event",op="write",port="1",result="timeout",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 0
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want),
		"rdma_probe_completion_errors_total", "rdma_probe_last_success_timestamp_seconds", "rdma_probe_success", "rdma_probes_total"); err != nil {
		t.Error(err)
	}
}

// TestRecordConnect: Init creates the connection counter at 0, so that
// rate() over it is 0 from the first scrape, but not the set-up gauge,
// which would claim a set-up of 0 s; each connection adds one and sets
// the gauge to its own set-up time.
func TestRecordConnect(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.Init(key, false)
	const before = `
# HELP rdma_probe_connections_total Connections (control channel and QPs) opened to the target; probes reuse one between rounds, so a rising rate means connections break or expire.
# TYPE rdma_probe_connections_total counter
rdma_probe_connections_total{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 0
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(before),
		"rdma_probe_connections_total", "rdma_probe_connection_setup_seconds"); err != nil {
		t.Errorf("after Init: %v", err)
	}
	m.RecordConnect(key, 250*time.Millisecond)
	m.RecordConnect(key, 1500*time.Microsecond)
	const after = `
# HELP rdma_probe_connection_setup_seconds How long the last connection set-up to the target took (control connection, handshake, QPs to RTS), in seconds; not part of the latency histogram.
# TYPE rdma_probe_connection_setup_seconds gauge
rdma_probe_connection_setup_seconds{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 0.0015
# HELP rdma_probe_connections_total Connections (control channel and QPs) opened to the target; probes reuse one between rounds, so a rising rate means connections break or expire.
# TYPE rdma_probe_connections_total counter
rdma_probe_connections_total{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 2
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(after),
		"rdma_probe_connections_total", "rdma_probe_connection_setup_seconds"); err != nil {
		t.Errorf("after two connections: %v", err)
	}
	if got := latencyCount(t, reg, key); got != 0 {
		t.Errorf("latency samples after connections: %d, want 0", got)
	}
	m.Forget(key)
	if n := testutil.CollectAndCount(reg, "rdma_probe_connections_total", "rdma_probe_connection_setup_seconds"); n != 0 {
		t.Errorf("after Forget: %d connection series left", n)
	}
}

// TestRecordCMSetup: a probe that connected through the CM sets the
// gauge to its slowest QP's set-up; a module connecting by exchange never
// has the series.
func TestRecordCMSetup(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.Init(key, false)
	m.Record(key, latencyResult(1500), nil, time.Millisecond, time.Unix(1700000000, 0))
	if n := testutil.CollectAndCount(reg, "rdma_probe_cm_setup_seconds"); n != 0 {
		t.Errorf("an exchange probe made %d CM set-up series", n)
	}
	res := latencyResult(1500)
	res.Connect = rdma.NewConnectStats([]rdma.CMTimes{
		{ResolveAddr: time.Millisecond, ResolveRoute: time.Millisecond, Connect: 2 * time.Millisecond},
		{ResolveAddr: time.Millisecond, ResolveRoute: time.Millisecond, Connect: 8 * time.Millisecond},
	}, 14*time.Millisecond, 1)
	m.Record(key, res, nil, time.Millisecond, time.Unix(1700000015, 0))
	const want = `
# HELP rdma_probe_cm_setup_seconds How long the slowest QP of the last connection through rdma_cm took to set up (address resolution, route resolution, connect to ESTABLISHED), in seconds; only for modules with connect: rdma_cm.
# TYPE rdma_probe_cm_setup_seconds gauge
rdma_probe_cm_setup_seconds{device="rxe1",mode="event",op="write",port="1",size_bytes="2",source="node-b",target="10.0.0.1:18520"} 0.01
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "rdma_probe_cm_setup_seconds"); err != nil {
		t.Error(err)
	}
}
