package collector

import (
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkPortCollect is what a scrape pays for the port collector:
// reading every port's files and turning them into metrics. "sysfs" has
// no netdevs; "roce" has three whose ethtool statistics are read, here
// from saved text rather than the ioctl, so it measures the collector's
// own work on them (filtering, categories, series) and not the driver's.
func BenchmarkPortCollect(b *testing.B) {
	b.Run("sysfs", func(b *testing.B) {
		benchmarkCollect(b, NewPortCollector(filepath.Join("testdata", "sysfs"), nil))
	})
	b.Run("roce", func(b *testing.B) {
		c := NewPortCollector(roceRoot, nil)
		c.ReadEthtool = savedEthtool(nil)
		benchmarkCollect(b, c)
	})
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
