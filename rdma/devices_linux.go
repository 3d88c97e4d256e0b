//go:build linux && cgo && !nordma

package rdma

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"unsafe"

	"github.com/rdmarun/rdmarun/sysfs"
)

// Devices lists the RDMA devices libibverbs sees, with the kernel's view
// of their ports and the active MTU and GID table that verbs gives.
func Devices() ([]Device, error) {
	names, err := sysfs.DeviceNames(sysfs.Root)
	if err != nil {
		return nil, err
	}
	devs := make([]Device, 0, len(names))
	for _, name := range names {
		d, err := readDevice(name)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

func readDevice(name string) (Device, error) {
	d, err := readSysfsDevice(name, false)
	if err != nil {
		return d, err
	}
	ctx, err := openContext(name)
	if err != nil {
		return d, err
	}
	defer C.ibv_close_device(ctx)
	tableLen := 0
	for j := range d.Ports {
		p := &d.Ports[j]
		var pi C.struct_rr_port_info
		if rc := C.rr_query_port(ctx, C.uint8_t(p.Num), &pi); rc != 0 {
			return d, rcErr("ibv_query_port", name, rc)
		}
		p.ActiveMTU = mtuBytes(int(pi.active_mtu))
		p.MaxMTU = mtuBytes(int(pi.max_mtu))
		tableLen += int(pi.gid_tbl_len)
	}
	if err := queryGIDs(ctx, &d, tableLen); err != nil {
		// Kernels without the GID table ioctl still have sysfs.
		return readSysfsDevice(name, true)
	}
	return d, nil
}

// queryGIDs fills every port's GID table with one ibv_query_gid_table
// call, which returns only the populated entries.
func queryGIDs(ctx *C.struct_ibv_context, d *Device, tableLen int) error {
	if tableLen == 0 {
		return nil
	}
	size := C.size_t(tableLen) * C.size_t(unsafe.Sizeof(C.struct_ibv_gid_entry{}))
	buf := C.malloc(size)
	if buf == nil {
		return syscall.ENOMEM
	}
	defer C.free(buf)
	n, err := C.rr_query_gid_table(ctx, (*C.struct_ibv_gid_entry)(buf), C.size_t(tableLen))
	if n < 0 {
		return verbsErr("ibv_query_gid_table", d.Name, err)
	}
	for _, e := range unsafe.Slice((*C.struct_ibv_gid_entry)(buf), int(n)) {
		p, err := d.Port(int(e.port_num))
		if err != nil {
			continue
		}
		raw := C.GoBytes(unsafe.Pointer(&e.gid), 16)
		g := GID{Index: int(e.gid_index), GID: GIDAddr(raw)}
		switch e.gid_type {
		case C.IBV_GID_TYPE_ROCE_V2:
			g.Type = GIDTypeRoCEv2
		case C.IBV_GID_TYPE_ROCE_V1:
			g.Type = GIDTypeRoCEv1
		default:
			g.Type = GIDTypeIB
		}
		if e.ndev_ifindex != 0 {
			if ifi, err := net.InterfaceByIndex(int(e.ndev_ifindex)); err == nil {
				g.Netdev = ifi.Name
			}
		}
		p.GIDs = append(p.GIDs, g)
	}
	for j := range d.Ports {
		gids := d.Ports[j].GIDs
		sort.Slice(gids, func(a, b int) bool { return gids[a].Index < gids[b].Index })
	}
	return nil
}

func findDevice(name string) (*Device, error) {
	if _, err := os.Stat(filepath.Join(sysfs.Root, name)); err != nil {
		names, _ := sysfs.DeviceNames(sysfs.Root)
		if len(names) == 0 {
			return nil, ErrNoDevice
		}
		return nil, fmt.Errorf("rdma: no device named %q (found: %v)", name, names)
	}
	d, err := readDevice(name)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// QueryLimits reads device's limits (ibv_query_device), so that a
// scenario above them is refused before its first run.
func QueryLimits(device string) (DeviceLimits, error) {
	ctx, err := openContext(device)
	if err != nil {
		return DeviceLimits{}, err
	}
	defer C.ibv_close_device(ctx)
	var attr C.struct_ibv_device_attr
	if rc := C.ibv_query_device(ctx, &attr); rc != 0 {
		return DeviceLimits{}, rcErr("ibv_query_device", device, rc)
	}
	return limitsOf(&attr), nil
}

func limitsOf(attr *C.struct_ibv_device_attr) DeviceLimits {
	return DeviceLimits{MaxQP: int(attr.max_qp), MaxCQ: int(attr.max_cq), MaxCQE: int(attr.max_cqe), MaxQPWR: int(attr.max_qp_wr),
		MaxSRQ: int(attr.max_srq), MaxSRQWR: int(attr.max_srq_wr)}
}

func openContext(name string) (*C.struct_ibv_context, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, verbsErr("ibv_get_device_list", "", err)
	}
	defer C.ibv_free_device_list(list)
	for _, d := range unsafe.Slice(list, int(n)) {
		if C.GoString(C.ibv_get_device_name(d)) != name {
			continue
		}
		ctx, err := C.ibv_open_device(d)
		if ctx == nil {
			return nil, verbsErr("ibv_open_device", name, err)
		}
		return ctx, nil
	}
	return nil, fmt.Errorf("rdma: libibverbs has no device %q (is its provider library installed? see ibv_devices)", name)
}
