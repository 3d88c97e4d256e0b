package ethtool

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// The loopback device exists in every network namespace and its driver
// keeps no ethtool statistics: the ioctl path runs and answers empty.
func TestStatsLoopback(t *testing.T) {
	got, err := Stats("lo")
	if err != nil {
		t.Fatalf("Stats(lo): %v", err)
	}
	if len(got) != 0 {
		t.Errorf("Stats(lo) = %v, want no statistics", got)
	}
}

func TestStatsErrors(t *testing.T) {
	if _, err := Stats("rdmarun-none0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("Stats of a missing netdev: %v, want ENODEV", err)
	}
	for _, name := range []string{"", "a-name-longer-than-ifnamsiz"} {
		if _, err := Stats(name); err == nil {
			t.Errorf("Stats(%q) succeeded, want an invalid-name error", name)
		}
	}
}
