package collector

import (
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkPortCollect is what a scrape pays for the port collector:
// reading every port's files and turning them into metrics.
func BenchmarkPortCollect(b *testing.B) {
	for _, tree := range []string{"sysfs"} {
		b.Run(tree, func(b *testing.B) {
			benchmarkCollect(b, NewPortCollector(filepath.Join("testdata", tree), nil))
		})
	}
}

func benchmarkCollect(b *testing.B, c prometheus.Collector) {
	b.ReportAllocs()
	for b.Loop() {
		ch := make(chan prometheus.Metric, 256)
		go func() { c.Collect(ch); close(ch) }()
		for range ch {
		}
	}
}
