package rdma

import (
	"math"
	"slices"
	"testing"
)

func TestExactSummary(t *testing.T) {
	seq := func(n int) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[n-1-i] = uint64(i + 1) // reversed, so sorting is exercised
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		samples []uint64
		want    Summary
	}{
		{name: "empty", samples: nil, want: Summary{}},
		{name: "one", samples: []uint64{7}, want: Summary{Count: 1, Min: 7, Max: 7, Mean: 7, P50: 7, P90: 7, P99: 7, P999: 7, P9999: 7}},
		{
			// Nearest rank over 1..10: p50 is the 5th, p90 the 9th, p99 the 10th.
			name: "1..10", samples: seq(10),
			want: Summary{Count: 10, Min: 1, Max: 10, Mean: 5.5, Stddev: math.Sqrt(8.25), P50: 5, P90: 9, P99: 10, P999: 10, P9999: 10},
		},
		{
			name: "1..10000", samples: seq(10000),
			want: Summary{Count: 10000, Min: 1, Max: 10000, Mean: 5000.5, Stddev: math.Sqrt((10000*10000 - 1) / 12.0),
				P50: 5000, P90: 9000, P99: 9900, P999: 9990, P9999: 9999},
		},
		{
			// Large, close values: a naive sum of squares would lose the spread.
			name: "large", samples: []uint64{1e15 + 1, 1e15 + 3},
			want: Summary{Count: 2, Min: 1e15 + 1, Max: 1e15 + 3, Mean: 1e15 + 2, Stddev: 1, P50: 1e15 + 1, P90: 1e15 + 3, P99: 1e15 + 3, P999: 1e15 + 3, P9999: 1e15 + 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]uint64(nil), tc.samples...)
			got := exactSummary(tc.samples)
			if math.Abs(got.Stddev-tc.want.Stddev) > 1e-9*math.Max(1, tc.want.Stddev) {
				t.Errorf("stddev = %v, want %v", got.Stddev, tc.want.Stddev)
			}
			got.Stddev = tc.want.Stddev
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			for i := range orig {
				if orig[i] != tc.samples[i] {
					t.Fatal("exactSummary reordered its input")
				}
			}
		})
	}
}

func TestHalf(t *testing.T) {
	s := exactSummary([]uint64{10, 20, 30, 40})
	h := s.Half()
	if h.Count != 4 || h.Min != 5 || h.Max != 20 || h.P50 != 10 || h.Mean != 12.5 || h.Stddev != s.Stddev/2 {
		t.Fatalf("Half = %+v", h)
	}
}

// exactSummary computes the summary of samples without modifying them,
// from every sample rather than a histogram: the reference the summary
// of a run is checked against. Percentiles are nearest-rank: the
// smallest sample that at least p of all samples are less than or equal
// to.
func exactSummary(samples []uint64) Summary {
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
