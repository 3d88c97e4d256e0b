package sysfs

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/golden"
)

// TestReadDevices pins everything read of the "kinds" tree: siw, rxe and
// mlx5 devices, a device named like rxe without a parent, one whose every
// port file is broken in its own way, and one without ports/.
func TestReadDevices(t *testing.T) {
	devs, err := ReadDevices(filepath.Join("testdata", "kinds"), Attributes|GIDs|Counters)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "kinds.golden", []byte(dump(devs)))
}

// TestReadDevicesParts: what is not asked for is not read, so a missing
// file of it is no error.
func TestReadDevicesParts(t *testing.T) {
	for _, tc := range []struct {
		parts Parts
		check func(t *testing.T, p Port)
	}{
		{Attributes, func(t *testing.T, p Port) {
			if p.GIDs != nil || p.Counters != nil || p.HWCounters != nil {
				t.Errorf("read GIDs %v or counters %v %v", p.GIDs, p.Counters, p.HWCounters)
			}
		}},
		{Counters, func(t *testing.T, p Port) {
			if p.State != (Enum{}) || p.RateText != "" || p.GIDs != nil {
				t.Errorf("read attributes or GIDs: %+v", p)
			}
			if p.HWCounters["rcvd_pkts"] != 42 {
				t.Errorf("hw_counters = %v", p.HWCounters)
			}
		}},
	} {
		d := ReadDevice(filepath.Join("testdata", "kinds"), "rxe1", tc.parts)
		if len(d.Ports) != 1 || len(d.Errors) != 0 || len(d.Ports[0].Errors) != 0 {
			t.Fatalf("parts %b: %+v", tc.parts, d)
		}
		tc.check(t, d.Ports[0])
	}
}

func TestDriver(t *testing.T) {
	want := map[string]string{
		"siw0":          "siw",
		"rxe1":          "rdma_rxe",
		"mlx5_2":        "mlx5_core",
		"rxe_lookalike": "",
		"bad1":          "",
	}
	for name, driver := range want {
		if got := ReadDevice(filepath.Join("testdata", "kinds"), name, Attributes).Driver; got != driver {
			t.Errorf("%s: driver %q, want %q", name, got, driver)
		}
	}
}

func TestDeviceNamesMissingRoot(t *testing.T) {
	names, err := DeviceNames(filepath.Join("testdata", "no-such-dir"))
	if err != nil || names != nil {
		t.Fatalf("got %v, %v; want no devices and no error on a host without RDMA", names, err)
	}
	devs, err := ReadDevices(filepath.Join("testdata", "no-such-dir"), Attributes)
	if err != nil || len(devs) != 0 {
		t.Fatalf("got %v, %v; want no devices and no error", devs, err)
	}
}

func TestPortErr(t *testing.T) {
	d := ReadDevice(filepath.Join("testdata", "kinds"), "bad1", Attributes|Counters)
	p := d.Ports[0]
	if err := p.Err("rate"); err == nil || err.Error() != `rate: not of the form "N Gb/sec": "fast"` {
		t.Errorf(`Err("rate") = %v`, err)
	}
	if err := p.Err("phys_state"); err == nil {
		t.Error(`Err("phys_state") = nil for "5"`)
	}
	if err := p.Err("counters/port_xmit_data"); err != nil {
		t.Errorf(`Err("counters/port_xmit_data") = %v`, err)
	}
	if p.RateText != "fast" || p.RateGbps != 0 {
		t.Errorf("rate %q %v, want the kernel's text kept and no value", p.RateText, p.RateGbps)
	}
}

// dump renders devices one field to a line, maps sorted.
func dump(devs []Device) string {
	var b strings.Builder
	for _, d := range devs {
		fmt.Fprintf(&b, "device %s driver=%q parent=%q node_guid=%q node_type=%q fw_ver=%q\n",
			d.Name, d.Driver, d.Parent, d.NodeGUID, d.NodeType, d.FWVer)
		for _, e := range d.Errors {
			fmt.Fprintf(&b, "  error %v\n", e)
		}
		for _, p := range d.Ports {
			fmt.Fprintf(&b, "  port %d state=%+v phys_state=%+v link_layer=%q rate=%q gbps=%v lid=%d\n",
				p.Num, p.State, p.PhysState, p.LinkLayer, p.RateText, p.RateGbps, p.LID)
			for _, g := range p.GIDs {
				fmt.Fprintf(&b, "    gid %d %s roce_v2=%v netdev=%q\n", g.Index, g.GID, g.RoCEv2, g.Netdev)
			}
			for _, k := range slices.Sorted(maps.Keys(p.Counters)) {
				fmt.Fprintf(&b, "    counters/%s %d\n", k, p.Counters[k])
			}
			for _, k := range slices.Sorted(maps.Keys(p.HWCounters)) {
				fmt.Fprintf(&b, "    hw_counters/%s %d\n", k, p.HWCounters[k])
			}
			for _, e := range p.Errors {
				fmt.Fprintf(&b, "    error %v\n", e)
			}
		}
	}
	return b.String()
}
