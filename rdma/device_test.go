package rdma

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmarun/rdmarun/internal/golden"
)

func TestReadSysfsDevices(t *testing.T) {
	devs, err := ReadSysfsDevices("testdata/sysfs")
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(devs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "sysfs-devices.golden.json", append(got, '\n'))
}

func TestReadSysfsDevicesMissingRoot(t *testing.T) {
	devs, err := ReadSysfsDevices("testdata/no-such-dir")
	if err != nil || len(devs) != 0 {
		t.Fatalf("got %v, %v; want no devices and no error on a host without RDMA", devs, err)
	}
}

// TestReadSysfsDevicesUnusable: a device whose ports or GID table cannot
// be read fails the listing, since no port or GID could be chosen on it.
func TestReadSysfsDevicesUnusable(t *testing.T) {
	for _, tc := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"node_guid": "0x1"}, "reading ports of x0: no such file or directory"},
		{map[string]string{"ports/1/state": "4: ACTIVE"}, "reading x0 port 1: no such file or directory"},
	} {
		root := t.TempDir()
		for name, content := range tc.files {
			p := filepath.Join(root, "x0", filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ReadSysfsDevices(root); err == nil || err.Error() != tc.want {
			t.Errorf("%v: error %v, want %q", tc.files, err, tc.want)
		}
	}
}

func TestSelectGID(t *testing.T) {
	devs, err := ReadSysfsDevices("testdata/sysfs")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Device{}
	for i := range devs {
		byName[devs[i].Name] = &devs[i]
	}
	for _, tc := range []struct {
		dev       string
		port      int
		index     int
		wantIndex int
		wantGID   string
		wantErr   string
	}{
		// soft-RoCE: the IPv4-mapped RoCE v2 GID beats the link-local one.
		{dev: "rxe0", port: 1, index: AutoGIDIndex, wantIndex: 1, wantGID: "::ffff:10.0.0.1"},
		{dev: "rxe0", port: 1, index: 0, wantIndex: 0, wantGID: "fe80::ac1e:b2ff:fe33:4455"},
		{dev: "rxe0", port: 1, index: 2, wantErr: "port 1 has no GID at index 2 (populated: 0, 1)"},
		// A NIC with v1 and v2 of each address: IPv4 v2 wins.
		{dev: "mlx5_1", port: 1, index: AutoGIDIndex, wantIndex: 5, wantGID: "::ffff:192.168.10.5"},
		{dev: "mlx5_1", port: 1, index: 4, wantIndex: 4, wantGID: "::ffff:192.168.10.5"},
		// InfiniBand: index 0, the port GID.
		{dev: "mlx5_0", port: 1, index: AutoGIDIndex, wantIndex: 0, wantGID: "fe80::b859:9f03:d4:1e2a"},
		{dev: "mlx5_0", port: 2, index: AutoGIDIndex, wantErr: "port 2 has no populated GID (is the netdev up with an IP address?)"},
	} {
		p, err := byName[tc.dev].Port(tc.port)
		if err != nil {
			t.Fatal(err)
		}
		g, err := p.SelectGID(tc.index)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s/%d index %d: error %v, want %q", tc.dev, tc.port, tc.index, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s/%d index %d: %v", tc.dev, tc.port, tc.index, err)
			continue
		}
		if g.Index != tc.wantIndex || g.GID.String() != tc.wantGID {
			t.Errorf("%s/%d index %d: got %d %s, want %d %s", tc.dev, tc.port, tc.index, g.Index, g.GID, tc.wantIndex, tc.wantGID)
		}
	}
}

func TestDevicePortMissing(t *testing.T) {
	d := Device{Name: "mlx5_0", Ports: []Port{{Num: 1}, {Num: 2}}}
	if _, err := d.Port(3); err == nil || err.Error() != "device mlx5_0 has no port 3 (ports: 1, 2)" {
		t.Fatalf("got %v", err)
	}
}

// TestFirstActive: the first device, in the listing's order, whose port
// of that number is ACTIVE; a device without the port is passed over.
func TestFirstActive(t *testing.T) {
	devs := []Device{
		{Name: "mlx5_0", Ports: []Port{{Num: 1, State: "DOWN"}, {Num: 2, State: "ACTIVE"}}},
		{Name: "rxe0", Ports: []Port{{Num: 1, State: "ACTIVE"}}},
		{Name: "mlx5_1", Ports: []Port{{Num: 1, State: "ACTIVE"}, {Num: 2, State: "INIT"}}},
	}
	for _, tc := range []struct {
		devs []Device
		port int
		want string // "" for none
	}{
		{devs, 1, "rxe0"},
		{devs, 2, "mlx5_0"},
		{devs, 3, ""},
		{devs[2:], 2, ""},
		{nil, 1, ""},
	} {
		name, ok := FirstActive(tc.devs, tc.port)
		if name != tc.want || ok != (tc.want != "") {
			t.Errorf("FirstActive(%d devices, port %d) = %q, %v; want %q", len(tc.devs), tc.port, name, ok, tc.want)
		}
	}
}

func TestMTU(t *testing.T) {
	for e, b := range map[int]int{1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096} {
		if mtuBytes(e) != b {
			t.Errorf("mtuBytes(%d) = %d, want %d", e, mtuBytes(e), b)
		}
		if got, err := MTUEnum(b); err != nil || got != e {
			t.Errorf("MTUEnum(%d) = %d, %v; want %d", b, got, err, e)
		}
	}
	if mtuBytes(0) != 0 || mtuBytes(6) != 0 {
		t.Error("mtuBytes accepts an enum outside 1..5")
	}
	if _, err := MTUEnum(1500); err == nil {
		t.Error("MTUEnum accepted 1500")
	}
}
