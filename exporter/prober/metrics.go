// Package prober runs RDMA probes against targets and keeps their results
// as long-lived Prometheus metrics, as smokeping_prober does: histograms
// that accumulate over the exporter's life, counters of errors by
// completion status, and the state of the last probe. The scheduler runs
// probes on their schedules, Handler one on demand (/probe), both through
// a Transport (PeerTransport: a remote responder). This file holds the
// metrics they share, kept and written by package exposition.
package prober

import (
	"errors"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/exposition"
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

// The families, by their index in families.
const (
	famLatency = iota
	famBandwidth
	famCompErrs
	famTimeouts
	famSuccess
	famLastOK
	famDuration
	famProbes
	famConnections
	famConnSetup
	famCMSetup
	famUDSent
	famUDLost
	numFamilies
)

var families = [numFamilies]exposition.Family{
	famLatency: {Name: "rdma_probe_latency_seconds", Kind: exposition.KindHistogram, Buckets: LatencyBuckets,
		Help: "Round-trip time of RDMA probe operations, in seconds."},
	famBandwidth: {Name: "rdma_probe_bandwidth_bytes_per_second", Kind: exposition.KindGauge,
		Help: "Bandwidth measured by the last bandwidth probe, first post to last completion, in bytes per second."},
	famCompErrs: {Name: "rdma_probe_completion_errors_total", Kind: exposition.KindCounter, Label: "status",
		Help: "Probes that ended with a work completion error, by completion status (e.g. RETRY_EXC_ERR)."},
	famTimeouts: {Name: "rdma_probe_timeouts_total", Kind: exposition.KindCounter,
		Help: "Probes that ended because the peer did not answer in time: the probe timeout, the stall deadline, or connecting the QP timing out."},
	famSuccess: {Name: "rdma_probe_success", Kind: exposition.KindGauge,
		Help: "Whether the last probe succeeded (1) or not (0)."},
	famLastOK: {Name: "rdma_probe_last_success_timestamp_seconds", Kind: exposition.KindGauge,
		Help: "When the last successful probe ended, in seconds since the epoch."},
	famDuration: {Name: "rdma_probe_duration_seconds", Kind: exposition.KindGauge,
		Help: "How long the last probe took to its outcome, connection set-up included, in seconds; closing a failed connection afterwards is not."},
	famProbes: {Name: "rdma_probes_total", Kind: exposition.KindCounter, Label: "result",
		Help: "Probes run, by result (success, completion_error, timeout, port_down, error)."},
	famConnections: {Name: "rdma_probe_connections_total", Kind: exposition.KindCounter,
		Help: "Connections (control channel and QPs) opened to the target; probes reuse one between rounds, so a rising rate means connections break or expire."},
	famConnSetup: {Name: "rdma_probe_connection_setup_seconds", Kind: exposition.KindGauge,
		Help: "How long the last connection set-up to the target took (control connection, handshake, QPs to RTS), in seconds; not part of the latency histogram."},
	famCMSetup: {Name: "rdma_probe_cm_setup_seconds", Kind: exposition.KindGauge,
		Help: "How long the slowest QP of the last connection through rdma_cm took to set up (address resolution, route resolution, connect to ESTABLISHED), in seconds; only for modules with connect: rdma_cm."},
	famUDSent: {Name: "rdma_probe_ud_sent_total", Kind: exposition.KindCounter,
		Help: "Messages (bandwidth probes) or round trips (latency probes) that UD probes sent; only for modules with qp: {type: ud}."},
	famUDLost: {Name: "rdma_probe_ud_lost_total", Kind: exposition.KindCounter,
		Help: "Of rdma_probe_ud_sent_total, those never received (a round trip with no answer at all); UD loses messages by design, so a loss is counted here, not as a failed probe."},
}

// LatencyBuckets start at 1 us: RDMA round trips on hardware are a few
// microseconds, below the 50 us where smokeping_prober's start. They
// double up to about 2 s, which covers soft-RoCE and a struggling fabric.
// Coarser buckets would cut the scrape but not the error of the quantiles
// the alerts read: with buckets 4x apart, histogram_quantile's p99 of a
// 5-minute window is off by 100-180% on average instead of 30-50%.
var LatencyBuckets = prometheus.ExponentialBuckets(1e-6, 2, 22)

// Metrics are the prober's long-lived series, per label set. They are
// kept in an exposition.Set rather than in client_golang vectors: a
// fleet's scrape walks 13 series per target, and the vectors made every
// scrape sort them all and allocate their labels (see package
// exposition for the measurements). /metrics writes them straight from
// the set (exposition.Handler); the set's Collect gives them to a
// registry, for /probe and the tests.
type Metrics struct {
	set *exposition.Set[Key]
}

// NewMetrics creates the metrics and registers them on reg: on an
// exposition.Handler, which writes them itself, or on a registry.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	// Targets come and go with discovery: their label pairs go with the
	// key; every other label's values come from the config.
	set, err := exposition.New(exposition.Labels[Key]{Names: labelNames, Values: Key.values, PerKey: []string{"target"}}, families[:])
	if err != nil {
		panic("prober: " + err.Error()) // the families above are wrong
	}
	reg.MustRegister(set)
	return &Metrics{set: set}
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
// Adding 0 creates a series and leaves one that exists as it is.
func (m *Metrics) Init(k Key, bandwidth bool) {
	m.set.Update(k, func(s exposition.Series) {
		if !bandwidth {
			s.Histogram(famLatency)
		} else {
			s.Add(famBandwidth, 0)
		}
		for _, st := range retryStatuses {
			s.AddLabelled(famCompErrs, st.String(), 0)
		}
		for _, f := range []int{famTimeouts, famSuccess, famLastOK, famDuration, famConnections} {
			s.Add(f, 0)
		}
		for _, r := range results {
			s.AddLabelled(famProbes, r, 0)
		}
	})
}

// Forget deletes every series of k, whatever its status or result, so a
// target that is no longer probed disappears from /metrics instead of
// showing its last values forever. It returns how many series went.
func (m *Metrics) Forget(k Key) int { return m.set.Forget(k) }

// RecordConnect files a connection (control channel and QPs) to k's
// target that was set up and took setup. The set-up is kept apart from
// the latency histogram: it is a signal of its own (a slow handshake, a
// responder under load), not round-trip time, and a probe on a kept
// connection no longer pays it.
func (m *Metrics) RecordConnect(k Key, setup time.Duration) {
	m.set.Update(k, func(s exposition.Series) {
		s.Add(famConnections, 1)
		s.Set(famConnSetup, setup.Seconds())
	})
}

// Record files one probe's outcome under k: its samples or bandwidth on
// success, its failure by kind otherwise.
func (m *Metrics) Record(k Key, res *rdma.Result, err error, took time.Duration, now time.Time) {
	// The samples go into the histogram, which has its own lock, after
	// the update, so that a scrape does not wait for them.
	var h *exposition.Histogram
	m.set.Update(k, func(s exposition.Series) { h = record(s, res, err, took, now) })
	if h != nil {
		// Each engine bucket is 0.1% wide, far finer than any bucket
		// here, so its samples are observed at its middle value.
		for _, b := range res.Latency.Buckets {
			h.Observe(float64(b.Ns)/1e9, b.Count, now)
		}
	}
}

// record files all but the latency samples in s, and returns the
// histogram they go into, if any.
func record(s exposition.Series, res *rdma.Result, err error, took time.Duration, now time.Time) *exposition.Histogram {
	s.Set(famDuration, took.Seconds())
	if err != nil {
		s.Set(famSuccess, 0)
		var ce *rdma.CompletionError
		var se *rdma.StallError
		var pd *rdma.PortDownError
		switch {
		case errors.As(err, &ce):
			s.AddLabelled(famCompErrs, ce.Status.String(), 1)
			s.AddLabelled(famProbes, "completion_error", 1)
		// ETIMEDOUT: connecting the QP found no answer from the peer's
		// address (on RoCE, its neighbour entry never resolved), which is
		// a dead path as much as a stall is; so is the responder's report
		// that the same happened on its end.
		case errors.As(err, &se), errors.Is(err, errTimeout), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, ctrl.ErrPeerTimeout):
			s.Add(famTimeouts, 1)
			s.AddLabelled(famProbes, "timeout", 1)
		case errors.As(err, &pd):
			s.AddLabelled(famProbes, "port_down", 1)
		default:
			s.AddLabelled(famProbes, "error", 1)
		}
		return nil
	}
	s.Set(famSuccess, 1)
	s.Set(famLastOK, float64(now.UnixNano())/1e9)
	s.AddLabelled(famProbes, "success", 1)
	// Only a probe that made its connection through the CM carries the
	// times; a module connecting by exchange never has the series.
	if c := res.Connect; c != nil && len(c.QPs) > 0 {
		s.Set(famCMSetup, c.Total.Max/1e9)
	}
	if b := res.Bandwidth; b != nil && len(b.Directions) > 0 {
		var bps float64
		for _, d := range b.Directions {
			bps += d.BytesPerSecond
			countDelivery(s, d.Delivery)
		}
		s.Set(famBandwidth, bps)
	}
	if res.Latency != nil {
		countDelivery(s, res.Latency.Delivery)
		return s.Histogram(famLatency)
	}
	return nil
}

// countDelivery adds a UD probe's sent and lost counts to s; a probe that
// is not UD has none, and its series never have the families.
func countDelivery(s exposition.Series, d *rdma.Delivery) {
	if d == nil {
		return
	}
	s.Add(famUDSent, float64(d.Sent))
	s.Add(famUDLost, float64(d.Lost))
}

// results are the values of rdma_probes_total's result label. port_down
// is a local port that is not ACTIVE: the probe sent nothing, and the
// fault is on this node's side of the link.
var results = []string{"success", "completion_error", "timeout", "port_down", "error"}

// errTimeout marks a probe that its context's deadline ended.
var errTimeout = errors.New("probe timed out")
