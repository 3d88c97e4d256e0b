package portstats

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmarun/rdmarun/ethtool"
)

// BenchmarkSnapshot is what a test pays for its port's counters, twice
// per run, on a Port its endpoint keeps: reading counters/ and
// hw_counters/, and the netdev's pause statistics, answered here from a
// map parsed once so that it measures portstats' own work and not the
// driver's ioctl.
func BenchmarkSnapshot(b *testing.B) {
	text, err := os.ReadFile(filepath.Join("testdata", "ethtool-before-ens1f0np0"))
	if err != nil {
		b.Fatal(err)
	}
	stats, err := ethtool.Parse(string(text))
	if err != nil {
		b.Fatal(err)
	}
	saved := readEthtool
	b.Cleanup(func() { readEthtool = saved })
	readEthtool = func(string) (map[string]uint64, error) { return stats, nil }
	for _, device := range []string{"mlx5_0", "rxe0"} {
		b.Run(device, func(b *testing.B) {
			port := NewPort("testdata/before", device, 1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := port.Snapshot(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
