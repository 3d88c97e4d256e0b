package exposition

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The registry's side of a Set: what /probe serves through promhttp, and
// the reference the tests hold Handler's output to. The registry sorts
// families by name itself; within a family it sorts series by their label
// values, which is the order Collect keeps (core.order) so that sort
// finds nothing to do.

// Describe sends the families' descriptions, so the registry checks their
// names and labels against its other collectors once, at registration.
func (c *core) Describe(ch chan<- *prometheus.Desc) {
	for i := range c.families {
		ch <- c.families[i].desc
	}
}

// Collect copies every value under the lock into a few blocks, so a
// scrape holds up an Update only for the copy and allocates a few large
// blocks rather than a handful of objects per series; then it writes the
// histograms, which have locks of their own, and sends everything in the
// registry's order.
func (c *core) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if !c.ordered {
		c.sortSeries()
	}
	n, counters, gauges, hists := 0, 0, 0, 0
	for f, refs := range c.order {
		n += len(refs)
		switch c.families[f].Kind {
		case KindCounter:
			counters += len(refs)
		case KindGauge:
			gauges += len(refs)
		case KindHistogram:
			hists += len(refs)
		}
	}
	samples := make([]sample, n)
	values := make([]float64, counters+gauges)
	counterDTOs := make([]dto.Counter, counters)
	gaugeDTOs := make([]dto.Gauge, gauges)
	histograms := make([]pendingHistogram, 0, hists)
	i, vi, ci, gi := 0, 0, 0, 0
	for f, refs := range c.order {
		fam := &c.families[f]
		for _, r := range refs {
			s := &samples[i]
			i++
			s.desc, s.labels = fam.desc, r.labels(fam)
			switch fam.Kind {
			case KindHistogram:
				histograms = append(histograms, pendingHistogram{s, r.histogram(fam)})
			case KindCounter:
				v, cd := &values[vi], &counterDTOs[ci]
				vi, ci = vi+1, ci+1
				*v = r.value(fam)
				cd.Value, cd.CreatedTimestamp = v, r.s.created
				s.counter = cd
			case KindGauge:
				v, g := &values[vi], &gaugeDTOs[gi]
				vi, gi = vi+1, gi+1
				*v = r.value(fam)
				g.Value = v
				s.gauge = g
			}
		}
	}
	c.mu.Unlock()
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
	h *Histogram
}

// sample is one series as a Collect saw it: one of counter, gauge and
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
