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

// each is every repeat's quantile.
func (s quantileOver) each() []float64 {
	out := make([]float64, len(s.runs))
	for i, h := range s.runs {
		out[i] = h.quantile(s.q)
	}
	return out
}

func (s quantileOver) replicate(r *rand.Rand) float64 {
	var sum float64
	for range s.runs {
		sum += s.runs[r.IntN(len(s.runs))].resampledQuantile(r, s.q)
	}
	return sum / float64(len(s.runs))
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

// betweenRuns is new/base for a metric measured once per run, with both
// sides run two or more times: Welch's t interval on the logarithms of
// the runs' values. The runs' own spread decides the width, with the
// small-sample penalty of few runs (t with 2 degrees of freedom is 4.3,
// not 1.96): the samples inside one run are correlated (a run that
// started on a slow core stays slow), so resampling them says less about
// the next run than the runs themselves do. Point values are geometric
// means, so Ratio is their ratio.
func betweenRuns(base, next []float64, confidence float64) (b, n float64, iv interval) {
	mb, vb := logMoments(base)
	mn, vn := logMoments(next)
	b, n = math.Exp(mb), math.Exp(mn)
	d := mn - mb
	sb, sn := vb/float64(len(base)), vn/float64(len(next))
	se := math.Sqrt(sb + sn)
	if se == 0 {
		return b, n, interval{Ratio: math.Exp(d), Low: math.Exp(d), High: math.Exp(d)}
	}
	df := (sb + sn) * (sb + sn) / (sb*sb/float64(len(base)-1) + sn*sn/float64(len(next)-1))
	half := studentT(confidence, df) * se
	return b, n, interval{Ratio: math.Exp(d), Low: math.Exp(d - half), High: math.Exp(d + half)}
}

// RatioInterval is next/base for a value measured once per run, with its
// interval at confidence from the runs' spread (Welch's t on the
// logarithms), the method rdmarun compare uses for repeated runs; both
// sides need two or more positive values.
func RatioInterval(base, next []float64, confidence float64) (ratio, low, high float64) {
	_, _, iv := betweenRuns(base, next, confidence)
	return iv.Ratio, iv.Low, iv.High
}

// logMoments are the mean and sample variance of log(x).
func logMoments(x []float64) (mean, variance float64) {
	for _, v := range x {
		mean += math.Log(v)
	}
	mean /= float64(len(x))
	for _, v := range x {
		d := math.Log(v) - mean
		variance += d * d
	}
	return mean, variance / float64(len(x)-1)
}

// studentT is the two-sided critical value of Student's t: P(|T| <= t) =
// confidence with df degrees of freedom (df need not be whole).
func studentT(confidence, df float64) float64 {
	want := (1 + confidence) / 2
	lo, hi := 0.0, 1e4
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tCDF is P(T <= t) for t >= 0.
func tCDF(t, df float64) float64 {
	return 1 - 0.5*regIncBeta(df/2, 0.5, df/(df+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by
// its continued fraction (evaluated with Lentz's method), on the side of x
// where the fraction converges fast.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x) + b*math.Log(1-x) + lab - la - lb)
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	clamp := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/clamp(1-(a+b)*x/(a+1))
	h := d
	for m := 1.0; m <= 500; m++ {
		even := m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		d = 1 / clamp(1+even*d)
		c = clamp(1 + even/c)
		h *= d * c
		odd := -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		d = 1 / clamp(1+odd*d)
		c = clamp(1 + odd/c)
		step := d * c
		h *= step
		if math.Abs(step-1) < eps {
			break
		}
	}
	return h
}
