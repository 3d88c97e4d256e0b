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
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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

// Metrics are the prober's long-lived series. They are kept here, per
// label set, rather than held in client_golang vectors: a fleet's scrape
// walks 13 series per target, and the vectors made every scrape sort them
// all and allocate their labels. /metrics writes them straight from here
// (ScrapeHandler, expose.go); Collect (collector.go) gives them to a
// registry, for /probe and the tests.
type Metrics struct {
	mu     sync.Mutex
	series map[Key]*probeSeries
	pairs  map[[2]string]*dto.LabelPair // label pairs shared by series, see labelPairs
	// extras are the statuses and results as a scrape writes them, shared
	// by every key's series (expose.go).
	extras map[[2]string]*renderedLabel
	// order is every series of every family in the order the registry
	// sorts them, rebuilt only after a series comes or goes.
	order    [numFamilies][]seriesRef
	ordered  bool
	families [numFamilies]*family
	// Named for the tests, which read single series through them.
	latency, bandwidth, compErrs, timeouts, success, lastOK, duration, probes *family
	connections, connSetup, cmSetup                                           *family
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{series: map[Key]*probeSeries{}, pairs: map[[2]string]*dto.LabelPair{}, extras: map[[2]string]*renderedLabel{}}
	for i, f := range familyDefs {
		m.families[i] = newFamily(m, f)
	}
	m.latency, m.bandwidth, m.compErrs, m.timeouts = m.families[famLatency], m.families[famBandwidth], m.families[famCompErrs], m.families[famTimeouts]
	m.success, m.lastOK, m.duration, m.probes = m.families[famSuccess], m.families[famLastOK], m.families[famDuration], m.families[famProbes]
	m.connections, m.connSetup, m.cmSetup = m.families[famConnections], m.families[famConnSetup], m.families[famCMSetup]
	reg.MustRegister(m)
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
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.seriesOf(k)
	if !bandwidth {
		m.latencyOf(s)
	} else {
		m.set(&s.bandwidth)
	}
	for _, st := range retryStatuses {
		m.labelled(&s.compErrs, s, famCompErrs, st.String())
	}
	m.set(&s.timeouts)
	m.set(&s.success)
	m.set(&s.lastOK)
	m.set(&s.duration)
	m.set(&s.connections)
	for _, r := range results {
		m.labelled(&s.probes, s, famProbes, r)
	}
}

// Forget deletes every series of k, whatever its status or result, so a
// target that is no longer probed disappears from /metrics instead of
// showing its last values forever. It returns how many series went.
func (m *Metrics) Forget(k Key) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.series[k]
	if !ok {
		return 0
	}
	delete(m.series, k)
	m.ordered = false
	return s.count()
}

// RecordConnect files a connection (control channel and QPs) to k's
// target that was set up and took setup. The set-up is kept apart from
// the latency histogram: it is a signal of its own (a slow handshake, a
// responder under load), not round-trip time, and a probe on a kept
// connection no longer pays it.
func (m *Metrics) RecordConnect(k Key, setup time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.seriesOf(k)
	m.set(&s.connections).v++
	m.set(&s.connSetup).v = setup.Seconds()
}

// Record files one probe's outcome under k: its samples or bandwidth on
// success, its failure by kind otherwise.
func (m *Metrics) Record(k Key, res *rdma.Result, err error, took time.Duration, now time.Time) {
	// The samples go into the histogram, which has its own lock, after
	// m.mu is released, so that a scrape does not wait for them.
	if h := m.record(k, res, err, took, now); h != nil {
		// Each engine bucket is 0.1% wide, far finer than any bucket
		// here, so its samples are observed at its middle value.
		for _, b := range res.Latency.Buckets {
			h.observe(float64(b.Ns)/1e9, b.Count, now)
		}
	}
}

// record files all but the latency samples, and returns the histogram
// they go into, if any.
func (m *Metrics) record(k Key, res *rdma.Result, err error, took time.Duration, now time.Time) *latencyHistogram {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.seriesOf(k)
	m.set(&s.duration).v = took.Seconds()
	if err != nil {
		m.set(&s.success).v = 0
		var ce *rdma.CompletionError
		var se *rdma.StallError
		var pd *rdma.PortDownError
		switch {
		case errors.As(err, &ce):
			m.labelled(&s.compErrs, s, famCompErrs, ce.Status.String()).v++
			m.labelled(&s.probes, s, famProbes, "completion_error").v++
		// ETIMEDOUT: connecting the QP found no answer from the peer's
		// address (on RoCE, its neighbour entry never resolved), which is
		// a dead path as much as a stall is; so is the responder's report
		// that the same happened on its end.
		case errors.As(err, &se), errors.Is(err, errTimeout), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, ctrl.ErrPeerTimeout):
			m.set(&s.timeouts).v++
			m.labelled(&s.probes, s, famProbes, "timeout").v++
		case errors.As(err, &pd):
			m.labelled(&s.probes, s, famProbes, "port_down").v++
		default:
			m.labelled(&s.probes, s, famProbes, "error").v++
		}
		return nil
	}
	m.set(&s.success).v = 1
	m.set(&s.lastOK).v = float64(now.UnixNano()) / 1e9
	m.labelled(&s.probes, s, famProbes, "success").v++
	// Only a probe that made its connection through the CM carries the
	// times; a module connecting by exchange never has the series.
	if c := res.Connect; c != nil && len(c.QPs) > 0 {
		m.set(&s.cmSetup).v = c.Total.Max / 1e9
	}
	if b := res.Bandwidth; b != nil && len(b.Directions) > 0 {
		var bps float64
		for _, d := range b.Directions {
			bps += d.BytesPerSecond
			m.countDelivery(s, d.Delivery)
		}
		m.set(&s.bandwidth).v = bps
	}
	if res.Latency != nil {
		m.countDelivery(s, res.Latency.Delivery)
		return m.latencyOf(s)
	}
	return nil
}

// countDelivery adds a UD probe's sent and lost counts to s; a probe that
// is not UD has none, and its series never have the families.
func (m *Metrics) countDelivery(s *probeSeries, d *rdma.Delivery) {
	if d == nil {
		return
	}
	m.set(&s.udSent).v += float64(d.Sent)
	m.set(&s.udLost).v += float64(d.Lost)
}

// results are the values of rdma_probes_total's result label. port_down
// is a local port that is not ACTIVE: the probe sent nothing, and the
// fault is on this node's side of the link.
var results = []string{"success", "completion_error", "timeout", "port_down", "error"}

// errTimeout marks a probe that its context's deadline ended.
var errTimeout = errors.New("probe timed out")
