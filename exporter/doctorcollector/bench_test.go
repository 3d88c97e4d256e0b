package doctorcollector

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkRun is one run of the doctor over a saved host: the cost the
// interval spreads out.
func BenchmarkRun(b *testing.B) {
	for _, host := range []string{"mlx5-roce", "rxe", "broken"} {
		b.Run(host, func(b *testing.B) {
			r := fixtureRunner(b, host)
			b.ReportAllocs()
			for b.Loop() {
				r.RunOnce()
			}
		})
	}
}

// BenchmarkCollect is what a scrape pays: the cached report as metrics.
func BenchmarkCollect(b *testing.B) {
	c := NewCollector(fixtureRunner(b, "broken"))
	ch := make(chan prometheus.Metric, 64)
	b.ReportAllocs()
	for b.Loop() {
		go func() { c.Collect(ch); close(ch) }()
		for range ch {
		}
		ch = make(chan prometheus.Metric, 64)
	}
}
