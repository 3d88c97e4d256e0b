package compare

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/rdmarun/rdmarun/rdma"
)

// histogram is one run's latency samples as the report stores them:
// bucket values in rising order and the running count up to each.
type histogram struct {
	values []float64
	cum    []uint64
}

func newHistogram(buckets []rdma.Bucket) histogram {
	b := slices.Clone(buckets)
	slices.SortFunc(b, func(x, y rdma.Bucket) int { return cmp.Compare(x.Ns, y.Ns) })
	h := histogram{values: make([]float64, len(b)), cum: make([]uint64, len(b))}
	var n uint64
	for i, x := range b {
		n += x.Count
		h.values[i], h.cum[i] = float64(x.Ns), n
	}
	return h
}

func (h histogram) count() uint64 {
	if len(h.cum) == 0 {
		return 0
	}
	return h.cum[len(h.cum)-1]
}

// rankOf is the rank (1..n) of the q-quantile among n samples: the
// smallest sample with at least q of them at or below it.
func rankOf(q float64, n uint64) uint64 {
	return min(max(uint64(math.Ceil(q*float64(n))), 1), n)
}

// at is the sample of the given rank.
func (h histogram) at(rank uint64) float64 {
	i := sort.Search(len(h.cum), func(i int) bool { return h.cum[i] >= rank })
	return h.values[min(i, len(h.values)-1)]
}

func (h histogram) quantile(q float64) float64 { return h.at(rankOf(q, h.count())) }

// resampledQuantile draws the q-quantile of one bootstrap resample of h
// (n draws with replacement) without drawing the n samples: the rank-k
// order statistic of n uniforms is Beta(k, n-k+1) distributed, and
// resampling is the empirical quantile function applied to uniforms, so
// the resample's quantile is that function at one Beta draw. This is the
// same distribution as resampling, at a cost independent of n.
func (h histogram) resampledQuantile(r *rand.Rand, q float64) float64 {
	n := h.count()
	k := rankOf(q, n)
	u := betaDraw(r, float64(k), float64(n-k+1))
	return h.at(min(max(uint64(math.Ceil(u*float64(n))), 1), n))
}

// betaDraw draws from Beta(a, b), a, b >= 1, as X/(X+Y) of two gamma draws.
func betaDraw(r *rand.Rand, a, b float64) float64 {
	x, y := gammaDraw(r, a), gammaDraw(r, b)
	return x / (x + y)
}

// gammaDraw draws from Gamma(shape, 1) for shape >= 1 by Marsaglia and
// Tsang's squeeze method (ACM TOMS 26(3), 2000).
func gammaDraw(r *rand.Rand, shape float64) float64 {
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// interval is new/base with its bootstrap interval at the options'
// confidence.
type interval struct {
	Ratio, Low, High float64
}

// statistic is how one side's value of a metric is drawn: its point
// estimate, and one bootstrap replicate of it.
type statistic interface {
	point() float64
	replicate(r *rand.Rand) float64
}

// quantileOver is a latency quantile over a side's repeats: the mean of
// each repeat's quantile. A replicate resamples the repeats (so the spread
// between runs is in the interval once there are several), then each
// chosen repeat's samples.
type quantileOver struct {
	runs []histogram
	q    float64
}

func (s quantileOver) point() float64 {
	var sum float64
	for _, h := range s.runs {
		sum += h.quantile(s.q)
	}
	return sum / float64(len(s.runs))
}

func (s quantileOver) replicate(r *rand.Rand) float64 {
	var sum float64
	for range s.runs {
		sum += s.runs[r.IntN(len(s.runs))].resampledQuantile(r, s.q)
	}
	return sum / float64(len(s.runs))
}

// meanOver is a rate over a side's repeats: their mean, a replicate
// resampling the repeats.
type meanOver []float64

func (s meanOver) point() float64 {
	var sum float64
	for _, v := range s {
		sum += v
	}
	return sum / float64(len(s))
}

func (s meanOver) replicate(r *rand.Rand) float64 {
	var sum float64
	for range s {
		sum += s[r.IntN(len(s))]
	}
	return sum / float64(len(s))
}

// ratioInterval is the percentile bootstrap interval of new/base.
func ratioInterval(r *rand.Rand, base, next statistic, resamples int, confidence float64) interval {
	ratios := make([]float64, resamples)
	for i := range ratios {
		ratios[i] = next.replicate(r) / base.replicate(r)
	}
	slices.Sort(ratios)
	tail := (1 - confidence) / 2
	lo := int(math.Floor(tail * float64(resamples)))
	hi := min(int(math.Ceil((1-tail)*float64(resamples)))-1, resamples-1)
	return interval{Ratio: next.point() / base.point(), Low: ratios[lo], High: ratios[hi]}
}
