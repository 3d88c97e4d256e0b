//go:build testbed

package collector

import (
	"sync"
	"testing"

	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/sysfs"
)

// TestCategoriesVM reads the soft-RoCE VM's real ports: rxe0 and rxe1 on
// veth0 and veth1. Their transport categories must be the sums of the
// rxe counters the name map names, read in the same scrape; they have
// no pause series; and no ethtool statistics are asked for, since a veth
// has no driver with a pause map.
func TestCategoriesVM(t *testing.T) {
	c := NewPortCollector(sysfs.Root, nil)
	var mu sync.Mutex
	var calls []string
	c.ReadEthtool = func(netdev string) (map[string]uint64, error) {
		mu.Lock()
		calls = append(calls, netdev)
		mu.Unlock()
		return ethtool.Stats(netdev)
	}
	got := gather(t, c)
	if len(calls) != 0 {
		t.Errorf("ethtool statistics read for %v; veth netdevs have no pause map", calls)
	}
	for _, family := range []string{"rdmarun_port_pause_frames_total", "rdmarun_port_pause_seconds_total"} {
		if s := got[family]; len(s) != 0 {
			t.Errorf("%s has series on soft-RoCE: %v", family, s)
		}
	}
	hw := func(device, name string) float64 {
		v, ok := find(got["rdmarun_port_hw_counters_total"], map[string]string{"device": device, "port": "1", "name": name})
		if !ok {
			t.Errorf("%s has no hw_counters/%s", device, name)
		}
		return v
	}
	for _, device := range []string{"rxe0", "rxe1"} {
		want := map[string]float64{
			"retransmits": hw(device, "completer_retry_err"),
			"seq_errors":  hw(device, "rcvd_seq_err") + hw(device, "out_of_seq_request"),
		}
		n := 0
		for _, s := range got["rdmarun_port_transport_events_total"] {
			if s.labels["device"] != device {
				continue
			}
			n++
			w, ok := want[s.labels["category"]]
			if !ok || s.value != w {
				t.Errorf("%s %s = %v, want %v (known: %v)", device, s.labels["category"], s.value, w, ok)
			}
		}
		if n != len(want) {
			t.Errorf("%s: %d category series, want %d: rxe has retransmits and seq_errors only", device, n, len(want))
		}
	}
}
