package sysfs

import (
	"slices"
	"testing"
)

// TestNetdevs reads testdata/netdev, a tree that stands for the layouts
// the two rules meet. mlx5_0 carries its IPv4 address on a VLAN only, so
// its GIDs 2 and 3 sit on ens1f0np0.100: that GID's traffic leaves by the
// VLAN interface, while the port's own netdev (its counters, its ECN and
// DCB settings) stays the parent, ens1f0np0.
func TestNetdevs(t *testing.T) {
	const root = "testdata/netdev"
	for _, tc := range []struct {
		device  string
		gid     int
		gidNet  string // GIDNetdev of that index
		portNet string // PortNetdev
		why     string
	}{
		{"mlx5_0", 0, "ens1f0np0", "ens1f0np0", "the default GID is on the port's own netdev"},
		{"mlx5_0", 3, "ens1f0np0.100", "ens1f0np0", "a VLAN GID is on the VLAN interface; the port is not"},
		{"mlx5_0", 7, "", "ens1f0np0", "an empty slot has no netdev"},
		{"mlx5_1", 0, "", "ens2f0np0", "no GID yet: the PCI function's only netdev"},
		{"mlx5_2", 0, "", "", "no GID yet, and the function has two netdevs: none is guessed"},
		{"mlx5_3", 0, "", "", "InfiniBand: its IPoIB netdev is not a RoCE port's"},
		{"rxe0", 0, "", "eth1", "soft-RoCE with no GID yet: its parent"},
		{"rxe1", 0, "eth2", "eth2", "soft-RoCE"},
		{"siw0", 0, "", "", "iWARP: no RoCE netdev, parent or not"},
		{"mlx5_9", 0, "", "", "no such device"},
	} {
		if got := GIDNetdev(root, tc.device, 1, tc.gid); got != tc.gidNet {
			t.Errorf("%s (%s): GIDNetdev(port 1, GID %d) = %q, want %q", tc.device, tc.why, tc.gid, got, tc.gidNet)
		}
		if got := PortNetdev(root, tc.device, 1); got != tc.portNet {
			t.Errorf("%s (%s): PortNetdev(port 1) = %q, want %q", tc.device, tc.why, got, tc.portNet)
		}
	}
}

// TestReadPortGIDNetdevs: the GID table as ReadPort lists it gives each
// entry the netdev GIDNetdev reads, the VLAN's for a VLAN GID.
func TestReadPortGIDNetdevs(t *testing.T) {
	p, err := ReadPort("testdata/netdev", "mlx5_0", 1, GIDs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range p.GIDs {
		got = append(got, g.Netdev)
		if want := GIDNetdev("testdata/netdev", "mlx5_0", 1, g.Index); g.Netdev != want {
			t.Errorf("GID %d: ReadPort says %q, GIDNetdev %q", g.Index, g.Netdev, want)
		}
	}
	if want := []string{"ens1f0np0", "ens1f0np0", "ens1f0np0.100", "ens1f0np0.100"}; !slices.Equal(got, want) {
		t.Errorf("netdevs of the GID table: %q, want %q", got, want)
	}
}
