// Package prober runs RDMA probes against targets and keeps their results
// as long-lived Prometheus metrics, as smokeping_prober does: histograms
// that accumulate over the exporter's life, counters of errors by
// completion status, and the state of the last probe. The scheduler runs
// probes on their schedules, Handler one on demand (/probe), both through
// a Transport (PeerTransport: a remote responder). This file holds the
// metrics they share.
package prober

import (
	"errors"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// Labels are bounded: this node's name, a fleet's targets, the few ops,
// sizes and modes a config names, the local device and port. QPNs, GUIDs
// and GIDs never become labels: they change with every probe or identify
// hardware without grouping anything. source is the probing node's own
// name (mesh.source): Prometheus' instance label says which exporter was
// scraped, but the localisation rules must compare a prober with the
// target label other nodes give it, so the name has to be the same kind
// of value on both sides.
var labelNames = []string{"source", "device", "port", "target", "op", "size_bytes", "mode"}

// LatencyBuckets start at 1 us: RDMA round trips on hardware are a few
// microseconds, below the 50 us where smokeping_prober's start. They
// double up to about 2 s, which covers soft-RoCE and a struggling fabric.
var LatencyBuckets = prometheus.ExponentialBuckets(1e-6, 2, 22)

// Metrics are the prober's long-lived series.
type Metrics struct {
	latency   *prometheus.HistogramVec
	bandwidth *prometheus.GaugeVec
	compErrs  *prometheus.CounterVec
	timeouts  *prometheus.CounterVec
	success   *prometheus.GaugeVec
	lastOK    *prometheus.GaugeVec
	duration  *prometheus.GaugeVec
	probes    *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "rdma_probe_latency_seconds",
			Help:                            "Round-trip time of RDMA probe operations, in seconds.",
			Buckets:                         LatencyBuckets,
			NativeHistogramBucketFactor:     1.05,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}, labelNames),
		bandwidth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rdma_probe_bandwidth_bytes_per_second",
			Help: "Bandwidth measured by the last bandwidth probe, first post to last completion, in bytes per second.",
		}, labelNames),
		compErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdma_probe_completion_errors_total",
			Help: "Probes that ended with a work completion error, by completion status (e.g. RETRY_EXC_ERR).",
		}, append(labelNames[:len(labelNames):len(labelNames)], "status")),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdma_probe_timeouts_total",
			Help: "Probes that ended because the peer did not answer in time: the probe timeout, the stall deadline, or connecting the QP timing out.",
		}, labelNames),
		success: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rdma_probe_success",
			Help: "Whether the last probe succeeded (1) or not (0).",
		}, labelNames),
		lastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rdma_probe_last_success_timestamp_seconds",
			Help: "When the last successful probe ended, in seconds since the epoch.",
		}, labelNames),
		duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rdma_probe_duration_seconds",
			Help: "How long the last probe took, setup included, in seconds.",
		}, labelNames),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdma_probes_total",
			Help: "Probes run, by result (success, completion_error, timeout, port_down, error).",
		}, append(labelNames[:len(labelNames):len(labelNames)], "result")),
	}
	reg.MustRegister(m.latency, m.bandwidth, m.compErrs, m.timeouts, m.success, m.lastOK, m.duration, m.probes)
	return m
}

// Key is one label set: a target probed with one op, size and mode from
// one local port.
type Key struct {
	Source string
	Device string
	Port   int
	Target string
	Op     rdma.Op
	Size   int
	Mode   rdma.Mode
}

// KeyOf is the label set of spec probed by node source against target
// from port of device. Every series is labelled through it, so the labels
// of the scheduled probes and of /probe cannot differ.
func KeyOf(source, device string, port int, target string, spec rdma.Test) Key {
	return Key{Source: source, Device: device, Port: port, Target: target, Op: spec.Op, Size: spec.Size, Mode: spec.Mode}
}

func (k Key) values() []string {
	return []string{k.Source, k.Device, strconv.Itoa(k.Port), k.Target, k.Op.String(), strconv.Itoa(k.Size), k.Mode.String()}
}

// retryStatuses are the completion statuses the alerts watch; their series
// exist from the start so a rate() over them is 0, not absent.
var retryStatuses = []rdma.WCStatus{rdma.WCRetryExcErr, rdma.WCRNRRetryExcErr}

// Init creates every series of k at its zero value, so dashboards and
// alerts see 0 rather than nothing before the first failure.
func (m *Metrics) Init(k Key, bandwidth bool) {
	v := k.values()
	if !bandwidth {
		m.latency.WithLabelValues(v...)
	} else {
		m.bandwidth.WithLabelValues(v...)
	}
	for _, s := range retryStatuses {
		m.compErrs.WithLabelValues(append(v, s.String())...)
	}
	m.timeouts.WithLabelValues(v...)
	m.success.WithLabelValues(v...)
	m.lastOK.WithLabelValues(v...)
	m.duration.WithLabelValues(v...)
	for _, r := range results {
		m.probes.WithLabelValues(append(v, r)...)
	}
}

// Forget deletes every series of k, whatever its status or result, so a
// target that is no longer probed disappears from /metrics instead of
// showing its last values forever. It returns how many series went.
func (m *Metrics) Forget(k Key) int {
	v := k.values()
	match := make(prometheus.Labels, len(labelNames))
	for i, n := range labelNames {
		match[n] = v[i]
	}
	n := 0
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.latency, m.bandwidth, m.compErrs, m.timeouts, m.success, m.lastOK, m.duration, m.probes} {
		n += vec.DeletePartialMatch(match)
	}
	return n
}

// Record files one probe's outcome under k: its samples or bandwidth on
// success, its failure by kind otherwise.
func (m *Metrics) Record(k Key, res *rdma.Result, err error, took time.Duration, now time.Time) {
	v := k.values()
	m.duration.WithLabelValues(v...).Set(took.Seconds())
	if err != nil {
		m.success.WithLabelValues(v...).Set(0)
		var ce *rdma.CompletionError
		var se *rdma.StallError
		var pd *rdma.PortDownError
		switch {
		case errors.As(err, &ce):
			m.compErrs.WithLabelValues(append(v, ce.Status.String())...).Inc()
			m.probes.WithLabelValues(append(v, "completion_error")...).Inc()
		// ETIMEDOUT: connecting the QP found no answer from the peer's
		// address (on RoCE, its neighbour entry never resolved), which is
		// a dead path as much as a stall is; so is the responder's report
		// that the same happened on its end.
		case errors.As(err, &se), errors.Is(err, errTimeout), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, ctrl.ErrPeerTimeout):
			m.timeouts.WithLabelValues(v...).Inc()
			m.probes.WithLabelValues(append(v, "timeout")...).Inc()
		case errors.As(err, &pd):
			m.probes.WithLabelValues(append(v, "port_down")...).Inc()
		default:
			m.probes.WithLabelValues(append(v, "error")...).Inc()
		}
		return
	}
	m.success.WithLabelValues(v...).Set(1)
	m.lastOK.WithLabelValues(v...).Set(float64(now.UnixNano()) / 1e9)
	m.probes.WithLabelValues(append(v, "success")...).Inc()
	if l := res.Latency; l != nil {
		obs := m.latency.WithLabelValues(v...)
		// Each engine bucket is 0.1% wide, far finer than any bucket
		// here, so its samples are observed at its middle value.
		for _, b := range l.Buckets {
			s := float64(b.Ns) / 1e9
			for range b.Count {
				obs.Observe(s)
			}
		}
	}
	if b := res.Bandwidth; b != nil && len(b.Directions) > 0 {
		var bps float64
		for _, d := range b.Directions {
			bps += d.BytesPerSecond
		}
		m.bandwidth.WithLabelValues(v...).Set(bps)
	}
}

// results are the values of rdma_probes_total's result label. port_down
// is a local port that is not ACTIVE: the probe sent nothing, and the
// fault is on this node's side of the link.
var results = []string{"success", "completion_error", "timeout", "port_down", "error"}

// errTimeout marks a probe that its context's deadline ended.
var errTimeout = errors.New("probe timed out")
