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

// PortNetdev returns the Ethernet device a RoCE port sends through: the
// netdev of GID index 0, which the kernel fills from the port's MAC
// address as soon as the netdev is bound. InfiniBand ports, and RoCE
// ports without a netdev, return "".
func PortNetdev(root, device string, port int) string {
	b, err := os.ReadFile(filepath.Join(root, device, "ports", strconv.Itoa(port), "gid_attrs", "ndevs", "0"))
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
