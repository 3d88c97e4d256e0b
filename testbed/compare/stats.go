package main

import (
	"fmt"
	"slices"
)

func values(runs []sample, of func(sample) float64) []float64 {
	out := make([]float64, len(runs))
	for i, s := range runs {
		out[i] = of(s)
	}
	return out
}

func positive(runs []sample, of func(sample) float64) bool {
	for _, s := range runs {
		if of(s) <= 0 {
			return false
		}
	}
	return true
}

func medianOf(runs []sample) sample {
	pick := func(f func(sample) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return sample{
		min:         pick(func(s sample) float64 { return s.min }),
		median:      pick(func(s sample) float64 { return s.median }),
		p99:         pick(func(s sample) float64 { return s.p99 }),
		p999:        pick(func(s sample) float64 { return s.p999 }),
		bytesPerSec: pick(func(s sample) float64 { return s.bytesPerSec }),
		msgsPerSec:  pick(func(s sample) float64 { return s.msgsPerSec }),
	}
}

// What a spread is taken over: a run's median latency, its bandwidth
// in Gb/s, or its message rate in millions per second.
var (
	latencyOf = func(s sample) float64 { return s.median }
	gbpsOf    = func(s sample) float64 { return s.bytesPerSec * 8 / 1e9 }
	rateOf    = func(s sample) float64 { return s.msgsPerSec / 1e6 }
)

// spread is the lowest and highest of val over runs, each written with
// format.
func spread(runs []sample, val func(sample) float64, format string) string {
	lo, hi := val(runs[0]), val(runs[0])
	for _, r := range runs {
		lo, hi = min(lo, val(r)), max(hi, val(r))
	}
	return fmt.Sprintf(format+"-"+format, lo, hi)
}
