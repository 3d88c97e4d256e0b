package prober

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The families, in the order Collect emits them. The registry sorts
// families by name itself; within a family it sorts series by their label
// values, which is the order Collect keeps (Metrics.order) so that sort
// finds nothing to do.
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

type familyKind int

const (
	kindCounter familyKind = iota
	kindGauge
	kindHistogram
)

type familyDef struct {
	name, help string
	kind       familyKind
	// extra is the label a family has beyond labelNames: the completion
	// status, or the result.
	extra string
}

var familyDefs = [numFamilies]familyDef{
	famLatency: {name: "rdma_probe_latency_seconds", kind: kindHistogram,
		help: "Round-trip time of RDMA probe operations, in seconds."},
	famBandwidth: {name: "rdma_probe_bandwidth_bytes_per_second", kind: kindGauge,
		help: "Bandwidth measured by the last bandwidth probe, first post to last completion, in bytes per second."},
	famCompErrs: {name: "rdma_probe_completion_errors_total", kind: kindCounter, extra: "status",
		help: "Probes that ended with a work completion error, by completion status (e.g. RETRY_EXC_ERR)."},
	famTimeouts: {name: "rdma_probe_timeouts_total", kind: kindCounter,
		help: "Probes that ended because the peer did not answer in time: the probe timeout, the stall deadline, or connecting the QP timing out."},
	famSuccess: {name: "rdma_probe_success", kind: kindGauge,
		help: "Whether the last probe succeeded (1) or not (0)."},
	famLastOK: {name: "rdma_probe_last_success_timestamp_seconds", kind: kindGauge,
		help: "When the last successful probe ended, in seconds since the epoch."},
	famDuration: {name: "rdma_probe_duration_seconds", kind: kindGauge,
		help: "How long the last probe took, setup included, in seconds."},
	famProbes: {name: "rdma_probes_total", kind: kindCounter, extra: "result",
		help: "Probes run, by result (success, completion_error, timeout, port_down, error)."},
	famConnections: {name: "rdma_probe_connections_total", kind: kindCounter,
		help: "Connections (control channel and QPs) opened to the target; probes reuse one between rounds, so a rising rate means connections break or expire."},
	famConnSetup: {name: "rdma_probe_connection_setup_seconds", kind: kindGauge,
		help: "How long the last connection set-up to the target took (control connection, handshake, QPs to RTS), in seconds; not part of the latency histogram."},
	famCMSetup: {name: "rdma_probe_cm_setup_seconds", kind: kindGauge,
		help: "How long the slowest QP of the last connection through rdma_cm took to set up (address resolution, route resolution, connect to ESTABLISHED), in seconds; only for modules with connect: rdma_cm."},
	famUDSent: {name: "rdma_probe_ud_sent_total", kind: kindCounter,
		help: "Messages (bandwidth probes) or round trips (latency probes) that UD probes sent; only for modules with qp: {type: ud}."},
	famUDLost: {name: "rdma_probe_ud_lost_total", kind: kindCounter,
		help: "Of rdma_probe_ud_sent_total, those never received (a round trip with no answer at all); UD loses messages by design, so a loss is counted here, not as a failed probe."},
}

type family struct {
	familyDef
	desc *prometheus.Desc
	// m is the Metrics the family belongs to, for the tests' reads of
	// one series (metrics_test.go).
	m *Metrics
}

func newFamily(m *Metrics, d familyDef) *family {
	names := labelNames
	if d.extra != "" {
		names = append(names[:len(names):len(names)], d.extra)
	}
	return &family{familyDef: d, desc: prometheus.NewDesc(d.name, d.help, names, nil), m: m}
}

// value is one series without a label of its own beyond the key's; on is
// whether it exists (Init or a probe created it).
type value struct {
	v  float64
	on bool
}

// labelledValue is one series of a family with an extra label (status,
// result), with its label pairs rendered once.
type labelledValue struct {
	value    string
	labels   []*dto.LabelPair
	rendered *renderedLabel // value as the scrape writes it (expose.go)
	v        float64
}

// probeSeries holds every series of one Key. Its label pairs are built
// once, sorted by name as the registry wants them, and shared by every
// scrape, which only reads them.
type probeSeries struct {
	key     Key
	labels  []*dto.LabelPair
	target  *dto.LabelPair         // shared by all of labels and the labelled values' labels
	created *timestamppb.Timestamp // when the counters started at 0
	// rendered and createdProto are labels and created as the scrape
	// writes them (expose.go), rendered once for the series' life.
	rendered     *renderedLabels
	createdProto string

	latency                                        *latencyHistogram // nil until the key has one
	bandwidth, timeouts, success, lastOK, duration value
	connections, connSetup, cmSetup                value
	udSent, udLost                                 value
	compErrs, probes                               []labelledValue
}

// count is how many series s exposes.
func (s *probeSeries) count() int {
	n := len(s.compErrs) + len(s.probes)
	if s.latency != nil {
		n++
	}
	for _, v := range []*value{&s.bandwidth, &s.timeouts, &s.success, &s.lastOK, &s.duration, &s.connections, &s.connSetup, &s.cmSetup, &s.udSent, &s.udLost} {
		if v.on {
			n++
		}
	}
	return n
}

// seriesOf is k's series, created empty. m.mu is held.
func (m *Metrics) seriesOf(k Key) *probeSeries {
	if s, ok := m.series[k]; ok {
		return s
	}
	s := &probeSeries{key: k, created: timestamppb.Now()}
	s.target = &dto.LabelPair{Name: &targetLabel, Value: &s.key.Target}
	s.labels = m.labelPairs(labelNames, k.values(), s.target)
	s.rendered = renderLabels(s.labels)
	s.createdProto = string(appendCounterCreated(nil, s.created))
	m.series[k] = s
	return s
}

// set marks v as existing and returns it. m.mu is held.
func (m *Metrics) set(v *value) *value {
	if !v.on {
		v.on = true
		m.ordered = false
	}
	return v
}

// labelled is the series of s in family f whose extra label is val,
// created at 0. m.mu is held.
func (m *Metrics) labelled(list *[]labelledValue, s *probeSeries, f int, val string) *labelledValue {
	for i := range *list {
		if (*list)[i].value == val {
			return &(*list)[i]
		}
	}
	names := append(labelNames[:len(labelNames):len(labelNames)], familyDefs[f].extra)
	name := familyDefs[f].extra
	extra, ok := m.extras[[2]string{name, val}]
	if !ok {
		extra = renderLabel(name, val)
		m.extras[[2]string{name, val}] = extra
	}
	*list = append(*list, labelledValue{value: val, labels: m.labelPairs(names, append(s.key.values(), val), s.target), rendered: extra})
	m.ordered = false
	return &(*list)[len(*list)-1]
}

// latencyOf is s's latency histogram, created empty. m.mu is held.
func (m *Metrics) latencyOf(s *probeSeries) *latencyHistogram {
	if s.latency == nil {
		s.latency = newLatencyHistogram(time.Now())
		m.ordered = false
	}
	return s.latency
}

// labelPairs renders names and values as the registry's label pairs,
// sorted by name, with target as the target's pair. The other pairs are
// shared by every series that has them: their values come from the
// config (this node's name, devices, ports, ops, sizes, modes) or from
// fixed lists (statuses, results), so there are a few dozen of them
// whatever the fleet's size, and a scrape, which reads every pair of
// every series, finds them in the cache instead of one apiece all over
// the heap. Each key has one target pair for all its series; targets come
// and go with discovery, so theirs go with the key. m.mu is held.
func (m *Metrics) labelPairs(names, values []string, target *dto.LabelPair) []*dto.LabelPair {
	lps := make([]*dto.LabelPair, len(names))
	for i := range names {
		if names[i] == targetLabel {
			lps[i] = target
			continue
		}
		k := [2]string{names[i], values[i]}
		lp, ok := m.pairs[k]
		if !ok {
			lp = &dto.LabelPair{Name: &names[i], Value: &values[i]}
			m.pairs[k] = lp
		}
		lps[i] = lp
	}
	slices.SortFunc(lps, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return lps
}

var targetLabel = "target"

// seriesRef names one series of a family: a key's, and for a family with
// an extra label, which of its values.
type seriesRef struct {
	s *probeSeries
	i int
}

// labels points at the series' label pairs, which stay as they are for
// the life of the series, so a scrape may read them after m.mu is
// released (an append that moves the list leaves the old copy as it was).
func (r seriesRef) labels(f int) *[]*dto.LabelPair {
	switch f {
	case famCompErrs:
		return &r.s.compErrs[r.i].labels
	case famProbes:
		return &r.s.probes[r.i].labels
	}
	return &r.s.labels
}

// sortSeries lists every series of every family in the registry's order:
// by label values, compared in the order of the label names. m.mu is held.
func (m *Metrics) sortSeries() {
	for f := range m.order {
		refs := m.order[f][:0]
		for _, s := range m.series {
			switch f {
			case famLatency:
				if s.latency != nil {
					refs = append(refs, seriesRef{s: s})
				}
			case famCompErrs, famProbes:
				list := s.compErrs
				if f == famProbes {
					list = s.probes
				}
				for i := range list {
					refs = append(refs, seriesRef{s: s, i: i})
				}
			default:
				if s.scalar(f).on {
					refs = append(refs, seriesRef{s: s})
				}
			}
		}
		slices.SortFunc(refs, func(a, b seriesRef) int {
			la, lb := *a.labels(f), *b.labels(f)
			for i := range la {
				if c := cmp.Compare(la[i].GetValue(), lb[i].GetValue()); c != 0 {
					return c
				}
			}
			return 0
		})
		clear(refs[len(refs):cap(refs)]) // let forgotten series go
		m.order[f] = refs
	}
	m.ordered = true
}

// scalar is s's series of a family without an extra label or histogram.
func (s *probeSeries) scalar(f int) *value {
	switch f {
	case famBandwidth:
		return &s.bandwidth
	case famTimeouts:
		return &s.timeouts
	case famSuccess:
		return &s.success
	case famLastOK:
		return &s.lastOK
	case famDuration:
		return &s.duration
	case famConnections:
		return &s.connections
	case famConnSetup:
		return &s.connSetup
	case famCMSetup:
		return &s.cmSetup
	case famUDSent:
		return &s.udSent
	case famUDLost:
		return &s.udLost
	}
	panic("prober: family " + strconv.Itoa(f) + " has no plain series")
}

// Describe sends the families' descriptions, so the registry checks their
// names and labels against its other collectors once, at registration.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range m.families {
		ch <- f.desc
	}
}

// Collect copies every value under the lock into a few blocks, so a
// scrape holds up Record only for the copy and allocates a few large
// blocks rather than a handful of objects per series; then it writes the
// histograms, which have locks of their own, and sends everything in the
// registry's order.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	if !m.ordered {
		m.sortSeries()
	}
	n, counters, gauges := 0, 0, 0
	for f, refs := range m.order {
		n += len(refs)
		switch familyDefs[f].kind {
		case kindCounter:
			counters += len(refs)
		case kindGauge:
			gauges += len(refs)
		}
	}
	samples := make([]sample, n)
	values := make([]float64, counters+gauges)
	counterDTOs := make([]dto.Counter, counters)
	gaugeDTOs := make([]dto.Gauge, gauges)
	histograms := make([]pendingHistogram, 0, len(m.order[famLatency]))
	i, vi, ci, gi := 0, 0, 0, 0
	for f, refs := range m.order {
		fam := m.families[f]
		for _, r := range refs {
			s := &samples[i]
			i++
			s.desc, s.labels = fam.desc, r.labels(f)
			switch fam.kind {
			case kindHistogram:
				histograms = append(histograms, pendingHistogram{s, r.s.latency})
			case kindCounter:
				v, c := &values[vi], &counterDTOs[ci]
				vi, ci = vi+1, ci+1
				switch f {
				case famCompErrs:
					*v = r.s.compErrs[r.i].v
				case famProbes:
					*v = r.s.probes[r.i].v
				default:
					*v = r.s.scalar(f).v
				}
				c.Value, c.CreatedTimestamp = v, r.s.created
				s.counter = c
			case kindGauge:
				v, g := &values[vi], &gaugeDTOs[gi]
				vi, gi = vi+1, gi+1
				*v = r.s.scalar(f).v
				g.Value = v
				s.gauge = g
			}
		}
	}
	m.mu.Unlock()
	var size histogramSize
	for _, p := range histograms {
		size.add(p.h.size())
	}
	blocks := newHistogramBlocks(size)
	for _, p := range histograms {
		p.s.histogram = p.h.write(blocks)
	}
	for i := range samples {
		ch <- &samples[i]
	}
}

type pendingHistogram struct {
	s *sample
	h *latencyHistogram
}

// sample is one series as a scrape saw it: one of counter, gauge and
// histogram is set.
type sample struct {
	desc      *prometheus.Desc
	labels    *[]*dto.LabelPair
	counter   *dto.Counter
	gauge     *dto.Gauge
	histogram *dto.Histogram
}

func (s *sample) Desc() *prometheus.Desc { return s.desc }

func (s *sample) Write(out *dto.Metric) error {
	out.Label, out.Counter, out.Gauge, out.Histogram = *s.labels, s.counter, s.gauge, s.histogram
	return nil
}
