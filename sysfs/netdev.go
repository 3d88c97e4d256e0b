package sysfs

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// DeviceDriver returns the kernel module behind the device called name
// under root, as ReadDevice does, reading only what that takes: the
// counters of a test read it before and after every run.
func DeviceDriver(root, name string) string {
	fsys := os.DirFS(root)
	d := &dir{fsys: fsys, name: name}
	parent, _ := d.read("parent", false)
	desc, _ := d.read("node_desc", false)
	return driver(fsys, name, parent, desc)
}

// PortNetdev returns a RoCE port's own Ethernet device: the one that
// holds the port's driver, its ethtool counters (pause frames among
// them) and its ECN and DCB settings. It is the netdev of GID index 0,
// the default GID the kernel derives from the port's own MAC address, so
// under a VLAN it is the parent (eth0), never the VLAN interface a test's
// GID may sit on (eth0.100: see GIDNetdev). When GID 0 shows no netdev,
// as in a table not filled yet, it is the device's parent (soft-RoCE's),
// else the PCI function's netdev if it has exactly one. InfiniBand and
// iWARP ports, and a RoCE port none of these name, return "".
func PortNetdev(root, device string, port int) string {
	if n := GIDNetdev(root, device, port, 0); n != "" {
		return n
	}
	dir := filepath.Join(root, device)
	if read(dir, "ports", strconv.Itoa(port), "link_layer") != "Ethernet" || IWARP(read(dir, "node_type")) {
		return ""
	}
	if parent := read(dir, "parent"); parent != "" {
		return parent
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "device", "net")); err == nil && len(entries) == 1 {
		return entries[0].Name()
	}
	return ""
}

// GIDNetdev returns the netdev the traffic of a GID leaves by: the GID's
// own (gid_attrs/ndevs/INDEX), which for a VLAN GID is the VLAN
// interface, whose MTU bounds the packets. "" for an InfiniBand GID, an
// empty slot, or a port without the table.
func GIDNetdev(root, device string, port, index int) string {
	return read(root, device, "ports", strconv.Itoa(port), "gid_attrs", "ndevs", strconv.Itoa(index))
}

// IWARP reports whether a node_type names an iWARP device ("4: RNIC"):
// Ethernet too, but its traffic is TCP's, addressed through the CM
// rather than by a GID.
func IWARP(nodeType string) bool {
	return strings.HasPrefix(nodeType, "4:") || strings.Contains(nodeType, "RNIC")
}

// read returns a file's trimmed content; "" when it cannot be read.
func read(path ...string) string {
	b, err := os.ReadFile(filepath.Join(path...))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// NetdevDriver returns the driver of a netdev: the module its bus device
// is bound to, such as mlx5_core or bnxt_en; "" for a virtual device
// (veth, bridge) that has none. The net class sits beside the RDMA class
// root under /sys/class, so a fixture tree holds both.
func NetdevDriver(root, netdev string) string {
	if netdev == "" || strings.ContainsAny(netdev, "/") {
		return ""
	}
	target, err := os.Readlink(filepath.Join(filepath.Dir(filepath.Clean(root)), "net", netdev, "device", "driver"))
	if err != nil {
		return ""
	}
	return path.Base(filepath.ToSlash(target))
}
