//go:build testbed

package rdma_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/sysfs"
)

// TestCategoriesOnRxe: a test's counter deltas on rxe come with their
// categories. rxe counts retries and sequence errors, so those two are
// reported (zero or not); it has no congestion counters, and its veth
// has no pause statistics, so the rest are unreported, with the reason,
// never shown as zero.
func TestCategoriesOnRxe(t *testing.T) {
	testbedDevices(t)
	r := run(t, "rxe1", "rxe0", rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Iterations: 500})
	if len(r.Sides) != 2 {
		t.Fatalf("%d sides, want 2", len(r.Sides))
	}
	for i, s := range r.Sides {
		c := s.Counters.Categories
		if c == nil {
			t.Fatalf("side %d (%s): no categories", i, s.Device)
		}
		netdev := "veth" + strings.TrimPrefix(s.Device, "rxe")
		// veth has no bus driver link in sysfs; its driver names itself
		// through the ethtool ioctl.
		if c.Driver != "rdma_rxe" || c.Netdev != netdev || c.NetdevDriver != "veth" {
			t.Errorf("side %s: driver %q netdev %q (%q), want rdma_rxe on %s (veth)", s.Device, c.Driver, c.Netdev, c.NetdevDriver, netdev)
		}
		for _, cat := range []string{portstats.Retransmits, portstats.SeqErrors} {
			if !c.Reported(cat) {
				t.Errorf("side %s: %s unreported: %s", s.Device, cat, c.Why(cat))
			}
		}
		for _, cat := range []string{portstats.CNPSent, portstats.ECNMarked, portstats.PauseRx, portstats.PauseTxUs} {
			if c.Reported(cat) || !slices.Contains(c.Unreported, cat) {
				t.Errorf("side %s: %s reported as %d, want unreported", s.Device, cat, c.Values[cat])
			}
		}
		if why, want := c.Why(portstats.PauseRx), "no pause counters known for netdev "+netdev+" (driver veth)"; why != want {
			t.Errorf("side %s: why pause_rx is unreported = %q, want %q", s.Device, why, want)
		}
		t.Logf("side %s: %v, unreported %v", s.Device, c.Values, c.Unreported)
	}
}

// TestEthtoolStatsVeth reads a real driver's statistics through the
// ioctl: veth reports the ifindex of its peer, which sysfs confirms.
func TestEthtoolStatsVeth(t *testing.T) {
	stats, err := ethtool.Stats("veth0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/sys/class/net/veth1/ifindex")
	if err != nil {
		t.Fatal(err)
	}
	want, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := stats["peer_ifindex"]; !ok || got != want {
		t.Errorf("veth0 peer_ifindex = %d (present %v), want veth1's ifindex %d; statistics: %v", got, ok, want, stats)
	}
}

// TestEthtoolDriverVeth: sysfs names no driver for a veth, which has no
// bus device; the driver names itself through the ioctl.
func TestEthtoolDriverVeth(t *testing.T) {
	got, err := ethtool.Driver("veth0")
	if err != nil || got != "veth" {
		t.Errorf("ethtool.Driver(veth0) = %q, %v; want veth", got, err)
	}
	t.Logf("sysfs names veth0's driver %q", sysfs.NetdevDriver(sysfs.Root, "veth0"))
}
