package exposition

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// testBuckets are the exporter's latency buckets: 1 us doubling to 2 s.
var testBuckets = prometheus.ExponentialBuckets(1e-6, 2, 22)

// referenceOpts are the options of the client_golang histogram that
// Histogram replaced: its output is the reference.
var referenceOpts = prometheus.HistogramOpts{
	Name:                            "reference",
	Help:                            "reference",
	Buckets:                         testBuckets,
	NativeHistogramBucketFactor:     1.05,
	NativeHistogramMaxBucketNumber:  nativeMaxBuckets,
	NativeHistogramMinResetDuration: nativeMinResetPeriod,
}

// histogramOf is what a scrape writes for h.
func histogramOf(h *Histogram) *dto.Histogram {
	return h.write(newHistogramBlocks(h.size()))
}

// TestHistogramMatchesClientGolang: for the same samples, the
// classic buckets, count, sum and native histogram (schema, zero bucket,
// spans and deltas) are client_golang's, including after the buckets
// outgrew the limit and the schema came down.
func TestHistogramMatchesClientGolang(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	for _, tc := range []struct {
		name    string
		samples func() []float64
	}{
		{name: "empty", samples: func() []float64 { return nil }},
		{name: "zero", samples: func() []float64 { return []float64{0, 0} }},
		{name: "one", samples: func() []float64 { return []float64{3e-6} }},
		{name: "powers of two and bucket bounds", samples: func() []float64 {
			var s []float64
			for e := -30; e < 3; e++ {
				s = append(s, math.Ldexp(1, e))
			}
			return append(s, testBuckets...)
		}},
		{name: "hardware, a tail", samples: func() []float64 {
			s := make([]float64, 2000)
			for i := range s {
				s[i] = 3e-6 * math.Exp(0.2*r.NormFloat64())
				if i%50 == 0 {
					s[i] *= 10
				}
			}
			return s
		}},
		{name: "gaps of one to four buckets", samples: func() []float64 {
			var s []float64
			for k, gap := 0, 1; k < 60; k, gap = k+gap+1, gap%4+1 {
				s = append(s, 1e-5*math.Exp2(float64(k)/16))
			}
			return s
		}},
		{name: "spread over six decades: the schema comes down", samples: func() []float64 {
			s := make([]float64, 5000)
			for i := range s {
				s[i] = 1e-6 * math.Pow(10, 6*r.Float64())
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := prometheus.NewHistogram(referenceOpts)
			h := newHistogram(testBuckets, time.Now())
			for _, v := range tc.samples() {
				ref.Observe(v)
				h.Observe(v, 1, time.Now())
			}
			var want dto.Metric
			if err := ref.Write(&want); err != nil {
				t.Fatal(err)
			}
			got := histogramOf(h)
			w := want.GetHistogram()
			if got.GetSampleCount() != w.GetSampleCount() || math.Abs(got.GetSampleSum()-w.GetSampleSum()) > 1e-9*math.Abs(w.GetSampleSum()) {
				t.Errorf("count %d sum %g, want %d %g", got.GetSampleCount(), got.GetSampleSum(), w.GetSampleCount(), w.GetSampleSum())
			}
			for i, b := range w.GetBucket() {
				if g := got.GetBucket()[i]; g.GetUpperBound() != b.GetUpperBound() || g.GetCumulativeCount() != b.GetCumulativeCount() {
					t.Errorf("bucket %d: le=%g %d, want le=%g %d", i, g.GetUpperBound(), g.GetCumulativeCount(), b.GetUpperBound(), b.GetCumulativeCount())
				}
			}
			if len(got.GetBucket()) != len(w.GetBucket()) {
				t.Errorf("%d classic buckets, want %d", len(got.GetBucket()), len(w.GetBucket()))
			}
			if got.GetSchema() != w.GetSchema() || got.GetZeroThreshold() != w.GetZeroThreshold() || got.GetZeroCount() != w.GetZeroCount() {
				t.Errorf("schema %d zero threshold %g zero count %d, want %d %g %d", got.GetSchema(), got.GetZeroThreshold(), got.GetZeroCount(),
					w.GetSchema(), w.GetZeroThreshold(), w.GetZeroCount())
			}
			if !reflect.DeepEqual(spans(got.GetPositiveSpan()), spans(w.GetPositiveSpan())) || !reflect.DeepEqual(got.GetPositiveDelta(), w.GetPositiveDelta()) {
				t.Errorf("native buckets %v %v, want %v %v", spans(got.GetPositiveSpan()), got.GetPositiveDelta(), spans(w.GetPositiveSpan()), w.GetPositiveDelta())
			}
			if got.GetCreatedTimestamp() == nil {
				t.Error("no created timestamp")
			}
		})
	}
}

func spans(s []*dto.BucketSpan) [][2]int64 {
	out := [][2]int64{}
	for _, sp := range s {
		out = append(out, [2]int64{int64(sp.GetOffset()), int64(sp.GetLength())})
	}
	return out
}

// spread observes samples over six decades: more native buckets than the
// limit at full resolution.
func spread(h *Histogram, now time.Time) {
	for i := range 1000 {
		h.Observe(1e-6*math.Pow(10, 6*float64(i)/1000), 1, now)
	}
}

// TestHistogramResets: a histogram that outgrew its buckets within
// the hour comes down in resolution and starts over at full resolution
// once the hour is up; one that outgrows them later starts over at once,
// keeping the sample that overflowed it.
func TestHistogramResets(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	h := newHistogram(testBuckets, t0)
	spread(h, t0.Add(time.Minute))
	if got := histogramOf(h); got.GetSchema() >= nativeSchema || got.GetSampleCount() != 1000 {
		t.Fatalf("after the spread: schema %d, %d samples; want a lower schema and 1000", got.GetSchema(), got.GetSampleCount())
	}
	if len(h.buckets) > nativeMaxBuckets {
		t.Errorf("%d native buckets, limit %d", len(h.buckets), nativeMaxBuckets)
	}
	h.Observe(5e-6, 1, t0.Add(59*time.Minute))
	if got := histogramOf(h); got.GetSampleCount() != 1001 {
		t.Errorf("within the hour: %d samples, want 1001", got.GetSampleCount())
	}
	later := t0.Add(time.Hour + time.Second)
	h.Observe(5e-6, 1, later)
	got := histogramOf(h)
	if got.GetSchema() != nativeSchema || got.GetSampleCount() != 1 || got.GetBucket()[2].GetCumulativeCount() != 0 || got.GetBucket()[3].GetCumulativeCount() != 1 {
		t.Errorf("after the hour: schema %d, %d samples, buckets %v; want schema %d and the one new sample", got.GetSchema(), got.GetSampleCount(), got.GetBucket()[:4], nativeSchema)
	}
	if !got.GetCreatedTimestamp().AsTime().Equal(later) {
		t.Errorf("created %v, want the reset's %v", got.GetCreatedTimestamp().AsTime(), later)
	}

	old := newHistogram(testBuckets, t0)
	at := t0.Add(2 * time.Hour)
	spread(old, at)
	got = histogramOf(old)
	if got.GetSchema() != nativeSchema || got.GetSampleCount() == 1000 || got.GetSampleCount() == 0 {
		t.Errorf("outgrown after the hour: schema %d, %d samples; want a reset at schema %d keeping the samples since", got.GetSchema(), got.GetSampleCount(), nativeSchema)
	}
	if !got.GetCreatedTimestamp().AsTime().Equal(at) {
		t.Errorf("created %v, want %v", got.GetCreatedTimestamp().AsTime(), at)
	}
}
