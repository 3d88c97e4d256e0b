package rdma

import (
	"math"
	"slices"
)

// Summary holds the statistics of a set of latency samples, in
// nanoseconds. Percentiles are nearest-rank: the smallest sample that at
// least p of all samples are less than or equal to, so every reported
// value is one that was measured.
type Summary struct {
	Count  int     `json:"count"`
	Min    float64 `json:"min_ns"`
	Max    float64 `json:"max_ns"`
	Mean   float64 `json:"mean_ns"`
	Stddev float64 `json:"stddev_ns"` // population standard deviation
	P50    float64 `json:"p50_ns"`
	P90    float64 `json:"p90_ns"`
	P99    float64 `json:"p99_ns"`
	P999   float64 `json:"p99_9_ns"`
	P9999  float64 `json:"p99_99_ns"`
}

// Summarize computes the summary of samples without modifying them.
func Summarize(samples []uint64) Summary {
	n := len(samples)
	if n == 0 {
		return Summary{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	// Welford's update keeps the variance exact enough even when the
	// samples are large and close together, where sum-of-squares cancels.
	var mean, m2 float64
	for i, v := range sorted {
		x := float64(v)
		d := x - mean
		mean += d / float64(i+1)
		m2 += d * (x - mean)
	}
	return Summary{
		Count:  n,
		Min:    float64(sorted[0]),
		Max:    float64(sorted[n-1]),
		Mean:   mean,
		Stddev: math.Sqrt(m2 / float64(n)),
		P50:    nearestRank(sorted, 0.50),
		P90:    nearestRank(sorted, 0.90),
		P99:    nearestRank(sorted, 0.99),
		P999:   nearestRank(sorted, 0.999),
		P9999:  nearestRank(sorted, 0.9999),
	}
}

func nearestRank(sorted []uint64, p float64) float64 {
	// The small epsilon keeps p*n from landing just above an integer
	// through floating-point error (0.9*10 = 9.000000000000002).
	rank := int(math.Ceil(p*float64(len(sorted)) - 1e-9))
	if rank < 1 {
		rank = 1
	}
	return float64(sorted[rank-1])
}

// Half returns the summary with every value halved: the one-way latency
// (RTT/2) of a ping-pong, which is what perftest reports for send and
// write.
func (s Summary) Half() Summary {
	return Summary{
		Count: s.Count, Min: s.Min / 2, Max: s.Max / 2, Mean: s.Mean / 2, Stddev: s.Stddev / 2,
		P50: s.P50 / 2, P90: s.P90 / 2, P99: s.P99 / 2, P999: s.P999 / 2, P9999: s.P9999 / 2,
	}
}
