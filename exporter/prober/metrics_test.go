package prober

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmarun/rdmarun/rdma"
)

// seriesOf counts the gathered series whose labels are all of k's.
func seriesOf(t *testing.T, reg *prometheus.Registry, k Key) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v := k.values()
	n := 0
	for _, mf := range mfs {
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				for i, name := range labelNames {
					if lp.GetName() == name && lp.GetValue() != v[i] {
						continue metric
					}
				}
			}
			n++
		}
	}
	return n
}

func TestForget(t *testing.T) {
	lat := key
	lat.Target = "gone"
	bw := lat
	bw.Size = 1 << 20
	other := key
	other.Target = "stays"
	all := []Key{lat, bw, other}
	// Init's series, plus those only a probe creates: a completion status
	// the alerts do not watch.
	const latSeries, bwSeries = 1 + 2 + 1 + 1 + 1 + 1 + 5, 1 + 2 + 1 + 1 + 1 + 1 + 5
	for _, tc := range []struct {
		name   string
		forget []Key
		want   map[Key]int // series left per key
	}{
		{name: "nothing", want: map[Key]int{lat: latSeries + 1, bw: bwSeries, other: latSeries}},
		{name: "one key", forget: []Key{lat}, want: map[Key]int{lat: 0, bw: bwSeries, other: latSeries}},
		{name: "a whole target", forget: []Key{lat, bw}, want: map[Key]int{lat: 0, bw: 0, other: latSeries}},
		{name: "twice is harmless", forget: []Key{lat, lat}, want: map[Key]int{lat: 0, bw: bwSeries, other: latSeries}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			m.Init(lat, false)
			m.Init(bw, true)
			m.Init(other, false)
			m.Record(lat, nil, &rdma.CompletionError{Status: rdma.WCRemAccessErr}, time.Millisecond, time.Now())
			for _, k := range tc.forget {
				m.Forget(k)
			}
			for _, k := range all {
				if got := seriesOf(t, reg, k); got != tc.want[k] {
					t.Errorf("%s size %d: %d series left, want %d", k.Target, k.Size, got, tc.want[k])
				}
			}
		})
	}
}
