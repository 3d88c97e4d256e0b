package portstats

import "testing"

func TestHasPauseMap(t *testing.T) {
	tests := []struct {
		netdevDriver string
		want         bool
	}{
		{"mlx5_core", true},
		{"bnxt_en", true},
		{"ice", true},
		// RDMA drivers name devices, not netdevs: their netdevs'
		// drivers are the ones above.
		{"mlx5_ib", false},
		{"bnxt_re", false},
		{"irdma", false},
		// The netdevs soft-RoCE runs over keep no pause statistics.
		{"veth", false},
		{"virtio_net", false},
		{"", false},
	}
	saved := readEthtool
	t.Cleanup(func() { readEthtool = saved })
	asked := false
	readEthtool = func(string) (map[string]uint64, error) {
		asked = true
		return map[string]uint64{}, nil
	}
	for _, tt := range tests {
		t.Run(tt.netdevDriver, func(t *testing.T) {
			asked = false
			if got := HasPauseMap(tt.netdevDriver); got != tt.want {
				t.Errorf("HasPauseMap(%q) = %v, want %v", tt.netdevDriver, got, tt.want)
			}
			// PauseOnly keeps statistics exactly for the drivers that
			// have a map, and ReadPause asks the device only for those.
			if kept := PauseOnly(tt.netdevDriver, map[string]uint64{}); (kept != nil) != tt.want {
				t.Errorf("PauseOnly(%q) = %v, want non-nil %v", tt.netdevDriver, kept, tt.want)
			}
			if _, err := ReadPause(tt.netdevDriver, "e0"); err != nil || asked != tt.want {
				t.Errorf("ReadPause(%q): asked the device %v (err %v), want %v", tt.netdevDriver, asked, err, tt.want)
			}
		})
	}
}
