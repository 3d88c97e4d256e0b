package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/golden"
)

// The fixture trees hold device directories directly. These tests put the
// same devices under a .../class/infiniband directory as the kernel lays
// it out, one symlink per device.

// classRoot builds <tmp>/sys/class/infiniband, one symlink per device,
// here pointing at fixture device directories (devices maps a device name
// to its directory). It returns the class directory, a --sysfs.root.
func classRoot(t *testing.T, devices map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sys", "class", "infiniband")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, dir := range devices {
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// treeDevices maps each device of the fixture tree to its directory.
func treeDevices(t *testing.T, tree string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", tree))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		out[e.Name()] = filepath.Join("testdata", tree, e.Name())
	}
	return out
}

// TestClassLayoutExposition reads each fixture through symlinked device
// directories and pins it to the same golden file: a port reads the same
// either way.
func TestClassLayoutExposition(t *testing.T) {
	for _, tree := range []string{"sysfs", "broken"} {
		t.Run(tree, func(t *testing.T) {
			c := NewPortCollector(classRoot(t, treeDevices(t, tree)), nil)
			golden.Check(t, tree+".prom", exposition(t, c))
		})
	}
}

// TestBrokenDevicesCostOnlyThemselves mixes healthy devices with broken
// ones: each device's series are those of its fixture tree, and only the
// broken files are counted.
func TestBrokenDevicesCostOnlyThemselves(t *testing.T) {
	devices := treeDevices(t, "sysfs")
	for name, dir := range treeDevices(t, "broken") {
		devices[name] = dir
	}
	got := gather(t, NewPortCollector(classRoot(t, devices), nil))

	want := series(gather(t, NewPortCollector(filepath.Join("testdata", "sysfs"), nil)))
	want = append(want, series(gather(t, NewPortCollector(filepath.Join("testdata", "broken"), nil)))...)
	slices.Sort(want)
	if g := series(got); !slices.Equal(g, want) {
		t.Errorf("series differ from the fixture trees'\n--- got\n%s\n--- want\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
	if e := got["rdmarun_port_collector_errors"]; len(e) != 1 || e[0].value != 5 {
		t.Errorf("rdmarun_port_collector_errors = %v, want the broken tree's 5", e)
	}
}

// TestMissingFilesCounted covers files a lenient parser would pass over
// silently but this collector counts: a missing node_guid, a counters/
// file reading "N/A (no PMA)", and a malformed counters/ file of a name
// no list knows. Every other file is still exported, whatever its name.
// The tree is read in both layouts and must give the same exposition.
func TestMissingFilesCounted(t *testing.T) {
	tree := t.TempDir()
	files := map[string]string{
		"fw_ver":                          "16.35.2000",
		"ports/1/state":                   "4: ACTIVE",
		"ports/1/phys_state":              "5: LinkUp",
		"ports/1/rate":                    "2.5 Gb/sec (1X SDR)",
		"ports/1/link_layer":              "InfiniBand",
		"ports/1/counters/port_xmit_data": "N/A (no PMA)",
		"ports/1/counters/port_rcv_data":  "25",
		"ports/1/counters/symbol_error":   "2",
		"ports/1/counters/vendor_extra":   "7",
		"ports/1/counters/vendor_bad":     "x",
		"ports/1/hw_counters/lifespan":    "10",
		"ports/1/hw_counters/np_cnp_sent": "4",
		"ports/1/hw_counters/custom_hw":   "11",
	}
	for name, content := range files {
		p := filepath.Join(tree, "mlx5_9", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	c := NewPortCollector(classRoot(t, map[string]string{"mlx5_9": filepath.Join(tree, "mlx5_9")}), nil)
	viaClass := exposition(t, c)
	direct := exposition(t, NewPortCollector(tree, nil))
	if string(viaClass) != string(direct) {
		t.Errorf("the two layouts differ\n--- class\n%s\n--- direct\n%s", viaClass, direct)
	}

	got := gather(t, c)
	if e := got["rdmarun_port_collector_errors"]; len(e) != 1 || e[0].value != 3 {
		t.Errorf("rdmarun_port_collector_errors = %v, want 3: node_guid, port_xmit_data, vendor_bad", e)
	}
	dev := map[string]string{"device": "mlx5_9", "port": "1"}
	named := func(name string) map[string]string {
		return map[string]string{"device": "mlx5_9", "port": "1", "name": name}
	}
	for _, tc := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"rdmarun_port_rate_bytes_per_second", dev, 312.5e6},
		{"rdmarun_port_counters_total", named("port_rcv_data"), 25},
		{"rdmarun_port_receive_bytes_total", dev, 100},
		{"rdmarun_port_counters_total", named("symbol_error"), 2},
		{"rdmarun_port_counters_total", named("vendor_extra"), 7},
		{"rdmarun_port_hw_counters_total", named("np_cnp_sent"), 4},
		{"rdmarun_port_hw_counters_total", named("custom_hw"), 11},
	} {
		if v, ok := find(got[tc.family], tc.labels); !ok || v != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.family, tc.labels, v, ok, tc.want)
		}
	}
	if n := len(got["rdmarun_port_transmit_bytes_total"]); n != 0 {
		t.Errorf("%d rdmarun_port_transmit_bytes_total series from an N/A port_xmit_data, want none", n)
	}
}

// TestClassLayoutMissingRoot: a host without RDMA devices, or without the
// sysfs mount, is healthy.
func TestClassLayoutMissingRoot(t *testing.T) {
	tmp := t.TempDir()
	if err := os.Mkdir(filepath.Join(tmp, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{
		filepath.Join(tmp, "sys", "class", "infiniband"),
		filepath.Join(tmp, "nosys", "class", "infiniband"),
	} {
		got := gather(t, NewPortCollector(root, nil))
		if len(got) != 1 {
			t.Errorf("%s: got families %v, want only rdmarun_port_collector_errors", root, keys(got))
		}
		if e := got["rdmarun_port_collector_errors"]; len(e) != 1 || e[0].value != 0 {
			t.Errorf("%s: rdmarun_port_collector_errors = %v, want 0", root, e)
		}
	}
}

// series renders every sample but the error count as one sorted line each.
func series(m map[string][]sample) []string {
	var out []string
	for family, samples := range m {
		if family == "rdmarun_port_collector_errors" {
			continue
		}
		for _, s := range samples {
			var labels []string
			for k, v := range s.labels {
				labels = append(labels, k+"="+v)
			}
			slices.Sort(labels)
			out = append(out, fmt.Sprintf("%s{%s} %v", family, strings.Join(labels, ","), s.value))
		}
	}
	slices.Sort(out)
	return out
}
