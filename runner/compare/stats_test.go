package compare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

// quantized rounds v (ns) to the middle of its histogram bucket as the
// engine records it: 1,024 buckets per power of two above 2,048 ns.
func quantized(v float64) int64 {
	n := int64(math.Max(v, 1))
	if n < 2048 {
		return n
	}
	shift := 63 - leadingZeros(uint64(n)) - 10
	w := int64(1) << shift
	return n/w*w + w/2
}

func leadingZeros(x uint64) int {
	n := 0
	for i := 63; i >= 0 && x&(1<<i) == 0; i-- {
		n++
	}
	return n
}

// distribution draws one latency sample in ns.
type distribution func(r *rand.Rand) float64

// unimodal: 20 us with a 2 us spread and an exponential tail, the shape of
// a busy-poll RTT.
func unimodal(r *rand.Rand) float64 {
	return 20000 + 2000*r.NormFloat64()*0.5 + r.ExpFloat64()*1500
}

// bimodal: 60% near 20 us, 40% near 35 us, the shape of soft-RoCE under
// emulation and of a NIC whose interrupts move between cores.
func bimodal(r *rand.Rand) float64 {
	if r.Float64() < 0.6 {
		return 20000 + 1000*r.NormFloat64() + r.ExpFloat64()*500
	}
	return 35000 + 2000*r.NormFloat64() + r.ExpFloat64()*1000
}

// runOf draws n samples of d scaled by factor into a result's buckets.
func runOf(r *rand.Rand, d distribution, n int, factor float64) *rdma.Result {
	counts := map[int64]uint64{}
	for range n {
		counts[quantized(d(r)*factor)]++
	}
	l := &rdma.LatencyStats{RTT: rdma.Summary{Count: n}}
	for ns, c := range counts {
		l.Buckets = append(l.Buckets, rdma.Bucket{Ns: ns, Count: c})
	}
	return &rdma.Result{Latency: l}
}

// verdictRate is how often, of trials comparisons of runs of d (NEW
// scaled by shift), the metric is judged v.
func verdictRate(t *testing.T, d distribution, q float64, samples, repeats int, shift float64, o Options, v Verdict, trials int) float64 {
	t.Helper()
	gen := rand.New(rand.NewPCG(7, uint64(shift*1e6)+uint64(samples)))
	boot := rand.New(rand.NewPCG(o.Seed, 1))
	hits := 0
	for range trials {
		var base, next []*rdma.Result
		for range repeats {
			base = append(base, runOf(gen, d, samples, 1))
			next = append(next, runOf(gen, d, samples, shift))
		}
		m := latencyChange(boot, "q", q, base, next, o)
		if m.Verdict == NotJudged {
			t.Fatalf("not judged: %s", m.Reason)
		}
		if m.Verdict == v {
			hits++
		}
	}
	return float64(hits) / float64(trials)
}

// TestLatencyVerdictRates: the error rates the method promises, over
// 1,000 trials each, for a unimodal and a bimodal latency at the default
// 1,000 iterations a run.
func TestLatencyVerdictRates(t *testing.T) {
	const trials = 1000
	o := DefaultOptions()
	o.Resamples = 1000
	for _, tc := range []struct {
		name string
		d    distribution
	}{{"unimodal", unimodal}, {"bimodal", bimodal}} {
		t.Run(tc.name, func(t *testing.T) {
			noEffect := Options{MinEffect: 0, Confidence: o.Confidence, Resamples: o.Resamples, Seed: o.Seed}
			// With no smallest effect the interval alone decides: a 0%
			// shift may be called a regression only as often as the
			// confidence allows (one side of 5%).
			if got := verdictRate(t, tc.d, 0.5, 1000, 1, 1, noEffect, Regressed, trials); got > 0.05 {
				t.Errorf("0%% shift, no smallest effect: p50 regressed in %.1f%% of trials, want at most 5%%", got*100)
			} else {
				t.Logf("0%% shift, no smallest effect: p50 regressed in %.1f%%", got*100)
			}
			if got := verdictRate(t, tc.d, 0.99, 1000, 1, 1, noEffect, Regressed, trials); got > 0.05 {
				t.Errorf("0%% shift, no smallest effect: p99 regressed in %.1f%% of trials, want at most 5%%", got*100)
			} else {
				t.Logf("0%% shift, no smallest effect: p99 regressed in %.1f%%", got*100)
			}
			if got := verdictRate(t, tc.d, 0.5, 1000, 1, 1, o, Regressed, trials); got > 0.05 {
				t.Errorf("0%% shift: p50 regressed in %.1f%% of trials, want at most 5%%", got*100)
			} else {
				t.Logf("0%% shift, 5%% smallest effect: p50 regressed in %.1f%%", got*100)
			}
			if got := verdictRate(t, tc.d, 0.5, 1000, 1, 1.10, o, Regressed, trials); got < 0.95 {
				t.Errorf("10%% shift: p50 regressed in %.1f%% of trials, want at least 95%%", got*100)
			} else {
				t.Logf("10%% shift: p50 regressed in %.1f%%", got*100)
			}
			if got := verdictRate(t, tc.d, 0.5, 1000, 1, 1.03, o, Regressed, trials); got != 0 {
				t.Errorf("3%% shift, 5%% smallest effect: p50 regressed in %.1f%% of trials, want never", got*100)
			} else {
				t.Logf("3%% shift, 5%% smallest effect: p50 regressed in 0%%")
			}
			if got := verdictRate(t, tc.d, 0.5, 1000, 1, 1/1.10, o, Improved, trials); got < 0.95 {
				t.Errorf("10%% faster: p50 improved in %.1f%% of trials, want at least 95%%", got*100)
			}
		})
	}
}

// TestRepeatsWidenTheInterval: runs whose levels differ between repeats
// (each run's latency scaled by its own factor, as two runs of one build
// differ under emulation) are not called regressed when compared over
// repeats, where one run against one run would be.
func TestRepeatsWidenTheInterval(t *testing.T) {
	o := DefaultOptions()
	o.Resamples = 1000
	gen := rand.New(rand.NewPCG(3, 3))
	boot := rand.New(rand.NewPCG(o.Seed, 1))
	level := func() float64 { return 1 + 0.06*gen.NormFloat64() } // about the testbed's spread
	const trials = 200
	single, repeated := 0, 0
	for range trials {
		b, n := []*rdma.Result{runOf(gen, bimodal, 1000, level())}, []*rdma.Result{runOf(gen, bimodal, 1000, level())}
		if latencyChange(boot, "p50", 0.5, b, n, o).Verdict == Regressed {
			single++
		}
		b, n = nil, nil
		for range 5 {
			b = append(b, runOf(gen, bimodal, 1000, level()))
			n = append(n, runOf(gen, bimodal, 1000, level()))
		}
		if latencyChange(boot, "p50", 0.5, b, n, o).Verdict == Regressed {
			repeated++
		}
	}
	t.Logf("a 6%% level spread between runs, no real change: regressed %d of %d one against one, %d of %d over 5 repeats", single, trials, repeated, trials)
	if repeated > trials/20 {
		t.Errorf("over 5 repeats, %d of %d trials regressed, want at most 5%%", repeated, trials)
	}
	if single <= repeated {
		t.Errorf("one run against one regressed %d times, 5 repeats %d: the repeats' spread is not in the interval", single, repeated)
	}
}

// TestRateVerdicts: bandwidth over repeats, 4% spread between runs.
func TestRateVerdicts(t *testing.T) {
	o := DefaultOptions()
	gen := rand.New(rand.NewPCG(5, 5))
	runs := func(n int, level float64) []*rdma.Result {
		var out []*rdma.Result
		for range n {
			bw := 1e9 * level * (1 + 0.04*gen.NormFloat64())
			out = append(out, &rdma.Result{Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{{BytesPerSecond: bw, MessagesPerSec: bw / 4096}}}})
		}
		return out
	}
	bw := func(d rdma.Direction) float64 { return d.BytesPerSecond }
	const trials = 1000
	falseAlarms, found := 0, 0
	for range trials {
		if rateChange("bw", "bytes_per_second", runs(5, 1), runs(5, 1), o, bw).Verdict == Regressed {
			falseAlarms++
		}
		if rateChange("bw", "bytes_per_second", runs(5, 1), runs(5, 0.85), o, bw).Verdict == Regressed {
			found++
		}
	}
	t.Logf("bandwidth over 5 repeats a side: no change regressed in %d of %d, 15%% lower in %d of %d", falseAlarms, trials, found, trials)
	if falseAlarms > trials/20 {
		t.Errorf("no change: %d of %d regressed, want at most 5%%", falseAlarms, trials)
	}
	if found < trials*95/100 {
		t.Errorf("15%% lower: %d of %d regressed, want at least 95%%", found, trials)
	}
	if m := rateChange("bw", "bytes_per_second", runs(1, 1), runs(1, 0.5), o, bw); m.Verdict != NotJudged {
		t.Errorf("one run a side: %s, want not judged", m.Verdict)
	}
}

// TestResampledQuantileMatchesResampling: the Beta shortcut draws what
// resampling the samples draws (mean and spread of the p50 over 4,000
// replicates agree within 5%).
func TestResampledQuantileMatchesResampling(t *testing.T) {
	gen := rand.New(rand.NewPCG(9, 9))
	res := runOf(gen, bimodal, 500, 1)
	h := newHistogram(res.Latency.Buckets)
	var flat []float64
	for i, v := range h.values {
		prev := uint64(0)
		if i > 0 {
			prev = h.cum[i-1]
		}
		for range h.cum[i] - prev {
			flat = append(flat, v)
		}
	}
	const reps = 4000
	var a, b []float64
	r := rand.New(rand.NewPCG(1, 2))
	for range reps {
		a = append(a, h.resampledQuantile(r, 0.5))
		s := make([]float64, len(flat))
		for i := range s {
			s[i] = flat[r.IntN(len(flat))]
		}
		b = append(b, sampleQuantile(s, 0.5))
	}
	ma, sa := meanSD(a)
	mb, sb := meanSD(b)
	t.Logf("p50 replicates: Beta %.0f +- %.0f ns, resampling %.0f +- %.0f ns", ma, sa, mb, sb)
	if math.Abs(ma-mb) > 0.05*mb || math.Abs(sa-sb) > 0.05*sb+1 {
		t.Errorf("Beta draws %.0f +- %.0f, resampling %.0f +- %.0f", ma, sa, mb, sb)
	}
}

// sampleQuantile is the q-quantile of samples, through a histogram of
// them as the report would store it.
func sampleQuantile(s []float64, q float64) float64 {
	h := map[float64]uint64{}
	for _, v := range s {
		h[v]++
	}
	var buckets []rdma.Bucket
	for v, c := range h {
		buckets = append(buckets, rdma.Bucket{Ns: int64(v), Count: c})
	}
	return newHistogram(buckets).quantile(q)
}

func meanSD(x []float64) (float64, float64) {
	var s, ss float64
	for _, v := range x {
		s += v
	}
	m := s / float64(len(x))
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)-1))
}

// TestStudentT: critical values against the printed tables.
func TestStudentT(t *testing.T) {
	for _, tc := range []struct{ conf, df, want float64 }{
		{0.95, 1, 12.706}, {0.95, 2, 4.303}, {0.95, 4, 2.776}, {0.95, 10, 2.228}, {0.95, 1000, 1.962}, {0.99, 5, 4.032}, {0.90, 3, 2.353},
	} {
		if got := studentT(tc.conf, tc.df); math.Abs(got-tc.want) > 0.001 {
			t.Errorf("t(%g, df %g) = %.4f, want %.3f", tc.conf, tc.df, got, tc.want)
		}
	}
}
