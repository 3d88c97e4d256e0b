package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Root is where the kernel lists RDMA devices. Callers take the root as a
// parameter, so tests and a containerised exporter (/host/sys/...) can
// point elsewhere.
const Root = "/sys/class/infiniband"

// Parts selects what to read of each port beyond nothing at all; reading
// only what a caller needs matters because some files are expensive.
type Parts uint8

const (
	// Attributes are the device's node GUID, type, firmware, parent and
	// driver, and each port's state, physical state, link layer, rate and
	// LID: a handful of cheap files.
	Attributes Parts = 1 << iota
	// GIDs is the port's GID table. It costs a few reads per slot, and a
	// port has up to 1024 slots (seconds under emulation), so the verbs
	// build reads it with one verbs call instead.
	GIDs
	// Counters are every file in the port's counters/ and hw_counters/.
	// Each counters/ file costs the kernel a MAD to the device.
	Counters
)

// Device is an RDMA device as sysfs shows it.
type Device struct {
	Name     string
	Driver   string // the kernel module; empty when unknown
	Parent   string // the netdev a software device (rxe, siw) sits on
	NodeGUID string
	NodeType string // as the kernel writes it, e.g. "1: CA"
	FWVer    string
	Ports    []Port // by number
	// Errors lists the device's own files that could not be used; each
	// port lists its own.
	Errors []FileError
}

// DeviceNames lists the devices under root, sorted; none when root does
// not exist, as on a host without RDMA, which is healthy.
func DeviceNames(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names, nil
}

// ReadDevices reads parts of every device under root. The error is for
// root itself; everything below it is reported per file.
func ReadDevices(root string, parts Parts) ([]Device, error) {
	names, err := DeviceNames(root)
	if err != nil {
		return nil, err
	}
	fsys := os.DirFS(root)
	devs := make([]Device, 0, len(names))
	for _, name := range names {
		devs = append(devs, readDevice(fsys, name, parts))
	}
	return devs, nil
}

// ReadDevice reads parts of the device called name under root.
func ReadDevice(root, name string, parts Parts) Device {
	return readDevice(os.DirFS(root), name, parts)
}

// readDevice reads through fsys so tests can inject the read errors that
// only real drivers produce.
func readDevice(fsys fs.FS, name string, parts Parts) Device {
	d := &dir{fsys: fsys, name: name}
	dev := Device{Name: name}
	if parts&Attributes != 0 {
		dev.NodeGUID, _ = d.read("node_guid", true)
		dev.NodeType, _ = d.read("node_type", false)
		dev.FWVer, _ = d.read("fw_ver", false)
		dev.Parent, _ = d.read("parent", false)
		desc, _ := d.read("node_desc", false)
		dev.Driver = driver(fsys, name, dev.Parent, desc)
	}
	entries, err := fs.ReadDir(fsys, path.Join(name, "ports"))
	if err != nil {
		d.fail("ports", err)
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 {
			continue // not a port, such as a stray file
		}
		pd := &dir{fsys: fsys, name: path.Join(name, "ports", e.Name())}
		dev.Ports = append(dev.Ports, readPort(pd, n, parts))
	}
	slices.SortFunc(dev.Ports, func(a, b Port) int { return a.Num - b.Num })
	dev.Errors = d.errors
	return dev
}

// driver is the kernel module behind the device. A device on a bus links
// to its driver. Software devices have no bus device: soft-RoCE's parent
// file names the netdev it sits on, and the kernel's naming of it gives
// the module; siw has no parent file (6.1) but a node description of its
// own. An unknown driver is left empty, not reported, since its absence
// is normal.
func driver(fsys fs.FS, name, parent, nodeDesc string) string {
	if target, err := fs.ReadLink(fsys, path.Join(name, "device", "driver")); err == nil {
		return path.Base(target)
	}
	switch {
	case nodeDesc == siwNodeDesc:
		return "siw"
	case parent != "" && strings.HasPrefix(name, "rxe"):
		return "rdma_rxe"
	}
	return ""
}

// siwNodeDesc is the node description every siw device has.
const siwNodeDesc = "Software iWARP stack"
