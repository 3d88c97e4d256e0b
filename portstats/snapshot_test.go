package portstats

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var rxeNames = []string{
	"ack_deferred", "completer_retry_err", "duplicate_request", "lifespan",
	"link_downed", "out_of_seq_request", "rcvd_pkts", "rcvd_rnr_err",
	"rcvd_seq_err", "rdma_recvs", "rdma_sends", "retry_exceeded_err",
	"retry_rnr_exceeded_err", "send_err", "send_rnr_err", "sent_pkts",
}

func TestSnapshot(t *testing.T) {
	tests := []struct {
		name, root, device string
		wantCounters       []string
		wantHW             []string
		spot               map[string]uint64 // "dir/name" -> value
	}{
		{
			name: "rxe has only hw_counters", root: "testdata/before", device: "rxe0",
			wantHW: rxeNames,
			spot:   map[string]uint64{"hw_counters/rcvd_pkts": 120034, "hw_counters/lifespan": 10},
		},
		{
			name: "mlx5 has both", root: "testdata/before", device: "mlx5_0",
			wantCounters: []string{
				"link_downed", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
				"port_xmit_data", "port_xmit_discards", "port_xmit_packets", "symbol_error",
			},
			wantHW: []string{
				"duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err",
				"np_cnp_sent", "out_of_buffer", "out_of_sequence", "packet_seq_err",
				"rnr_nak_retry_err", "rp_cnp_handled",
			},
			spot: map[string]uint64{"counters/port_xmit_data": 1000000, "hw_counters/rp_cnp_handled": 500},
		},
		{
			name: "mlx5 after", root: "testdata/after", device: "mlx5_0",
			spot: map[string]uint64{"counters/port_xmit_data": 3621440, "hw_counters/rp_cnp_handled": 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			c, err := Snapshot(tt.root, tt.device, 1)
			if err != nil {
				t.Fatal(err)
			}
			if c.Device != tt.device || c.Port != 1 {
				t.Errorf("device/port = %s/%d, want %s/1", c.Device, c.Port, tt.device)
			}
			if c.Time.Before(start) {
				t.Errorf("Time %v is before the call at %v", c.Time, start)
			}
			if len(c.Skipped) != 0 {
				t.Errorf("Skipped = %q, want none", c.Skipped)
			}
			if tt.wantCounters != nil || tt.wantHW != nil {
				if got := slices.Sorted(maps.Keys(c.Counters)); !slices.Equal(got, tt.wantCounters) {
					t.Errorf("counters = %q, want %q", got, tt.wantCounters)
				}
				if got := slices.Sorted(maps.Keys(c.HWCounters)); !slices.Equal(got, tt.wantHW) {
					t.Errorf("hw_counters = %q, want %q", got, tt.wantHW)
				}
			}
			for key, want := range tt.spot {
				dir, name, _ := strings.Cut(key, "/")
				m := c.Counters
				if dir == "hw_counters" {
					m = c.HWCounters
				}
				if got, ok := m[name]; !ok || got != want {
					t.Errorf("%s = %d (present %v), want %d", key, got, ok, want)
				}
			}
		})
	}
}

func TestSnapshotMissingPort(t *testing.T) {
	tests := []struct {
		name, device string
		port         int
		want         string
		notExist     bool
	}{
		{
			name: "no such port", device: "rxe0", port: 2, notExist: true,
			want: "portstats: testdata/before/rxe0/ports/2: file does not exist; run `rdmarun devices` to list RDMA devices and their ports",
		},
		{
			name: "no such device", device: "mlx9_9", port: 1, notExist: true,
			want: "portstats: testdata/before/mlx9_9/ports/1: file does not exist; run `rdmarun devices` to list RDMA devices and their ports",
		},
		{
			name: "device name escapes root", device: "../before", port: 1,
			want: `portstats: invalid device name "../before"`,
		},
		{
			name: "negative port", device: "rxe0", port: -1,
			want: "portstats: invalid port -1 for device rxe0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Snapshot("testdata/before", tt.device, tt.port)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tt.notExist)
			}
		})
	}
}

// TestPortKeepsNames: a kept Port reads fresh counters on every snapshot,
// and the device's driver, the netdev and its driver from when it was made.
func TestPortKeepsNames(t *testing.T) {
	root := filepath.Join(t.TempDir(), "class", "infiniband")
	if err := os.CopyFS(root, os.DirFS("testdata/before")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(filepath.Dir(root), "net"), os.DirFS("testdata/net")); err != nil {
		t.Fatal(err)
	}
	fixtureEthtool(t, "before")
	port := NewPort(root, "mlx5_0", 1)
	first, err := port.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := [3]string{"mlx5_core", "ens1f0np0", "mlx5_core"}
	if got := [3]string{first.Driver, first.Netdev, first.NetdevDriver}; got != want {
		t.Fatalf("driver, netdev, netdev driver = %q, want %q", got, want)
	}
	files := filepath.Join(root, "mlx5_0", "ports", "1")
	for name, text := range map[string]string{"hw_counters/np_cnp_sent": "99\n", "gid_attrs/ndevs/0": "renamed0\n"} {
		if err := os.WriteFile(filepath.Join(files, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	second, err := port.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := second.HWCounters["np_cnp_sent"]; got != 99 {
		t.Errorf("np_cnp_sent = %d on the second snapshot, want the new 99", got)
	}
	if got := [3]string{second.Driver, second.Netdev, second.NetdevDriver}; got != want {
		t.Errorf("second snapshot: driver, netdev, netdev driver = %q, want those of the first, %q", got, want)
	}
	if fresh := NewPort(root, "mlx5_0", 1); fresh.netdev != "renamed0" {
		t.Errorf("a new Port names netdev %q, want renamed0", fresh.netdev)
	}
}

// TestNetdevDriverFallback: a netdev sysfs names no driver for is asked
// for its own on the live host, so the reasons name veth; a fixture tree
// keeps sysfs's answer, and a netdev that sysfs names a driver for is
// never asked.
func TestNetdevDriverFallback(t *testing.T) {
	tests := []struct {
		name, liveRoot, device string
		answer                 string // what the netdev's driver reports; "" fails
		wantDriver             string
		wantAsked              bool
		wantWhy                string
	}{
		{
			name: "live veth", liveRoot: "testdata/before", device: "rxe0", answer: "veth",
			wantDriver: "veth", wantAsked: true,
			wantWhy: "no pause counters known for netdev veth0 (driver veth)",
		},
		{
			name: "live veth that does not answer", liveRoot: "testdata/before", device: "rxe0",
			wantAsked: true,
			wantWhy:   "no pause counters known for netdev veth0 (driver unknown)",
		},
		{
			name: "fixture tree", liveRoot: "/sys/class/infiniband", device: "rxe0", answer: "veth",
			wantWhy: "no pause counters known for netdev veth0 (driver unknown)",
		},
		{
			name: "sysfs names the driver", liveRoot: "testdata/before", device: "mlx5_0", answer: "veth",
			wantDriver: "mlx5_core",
			wantWhy:    "netdev ens1f0np0 reported none of driver mlx5_core's pause counters",
		},
	}
	savedRoot, savedDriver, savedEthtool := liveRoot, readDriver, readEthtool
	t.Cleanup(func() { liveRoot, readDriver, readEthtool = savedRoot, savedDriver, savedEthtool })
	readEthtool = func(string) (map[string]uint64, error) { return map[string]uint64{}, nil }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			liveRoot = tt.liveRoot
			var asked []string
			readDriver = func(netdev string) (string, error) {
				asked = append(asked, netdev)
				if tt.answer == "" {
					return "", errors.New("no answer")
				}
				return tt.answer, nil
			}
			c, err := NewPort("testdata/before", tt.device, 1).Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if c.NetdevDriver != tt.wantDriver {
				t.Errorf("NetdevDriver = %q, want %q", c.NetdevDriver, tt.wantDriver)
			}
			if got := len(asked) > 0; got != tt.wantAsked {
				t.Errorf("asked the netdev for its driver: %q, want asked %v", asked, tt.wantAsked)
			}
			if why := c.Categories().Why(PauseRx); why != tt.wantWhy {
				t.Errorf("Why(pause_rx) = %q, want %q", why, tt.wantWhy)
			}
		})
	}
}

// TestSnapshotAfter: a port reads its hw_counters lifespan, and a
// snapshot after t is not taken before t plus that lifespan and a
// jiffy, which is when the kernel can no longer answer with a reading
// from before t; a port without hw_counters does not wait.
func TestSnapshotAfter(t *testing.T) {
	rxe := NewPort("testdata/before", "rxe0", 1)
	if rxe.lifespan != 10*time.Millisecond {
		t.Fatalf("lifespan %v, want the fixture's 10ms", rxe.lifespan)
	}
	start := time.Now()
	if _, err := rxe.SnapshotAfter(start); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < rxe.lifespan+jiffyMargin {
		t.Errorf("the snapshot came %v after t, before the lifespan and a jiffy (%v)", took, rxe.lifespan+jiffyMargin)
	}
	if none := NewPort(t.TempDir(), "rxe9", 1); none.lifespan != 0 {
		t.Errorf("a port without hw_counters has lifespan %v, want 0 (no wait)", none.lifespan)
	}
}
