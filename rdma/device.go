package rdma

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rdmarun/rdmarun/sysfs"
)

// GIDType is the kind of a GID table entry.
type GIDType string

// The GID types the kernel reports. sysfs names IB GIDs and RoCE v1 GIDs
// alike ("IB/RoCE v1"); the port's link layer tells them apart.
const (
	GIDTypeIB     GIDType = "IB"
	GIDTypeRoCEv1 GIDType = "RoCEv1"
	GIDTypeRoCEv2 GIDType = "RoCEv2"
)

// GIDAddr is a 128-bit GID. It prints IPv4-mapped GIDs as ::ffff:a.b.c.d,
// as the kernel and rdma-core do, not as a bare IPv4 address.
type GIDAddr net.IP

func (g GIDAddr) String() string {
	if len(g) == 0 {
		return ""
	}
	ip := net.IP(g)
	if v4 := ip.To4(); v4 != nil && len(ip) == net.IPv6len {
		return "::ffff:" + v4.String()
	}
	return ip.String()
}

// MarshalText implements encoding.TextMarshaler.
func (g GIDAddr) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (g *GIDAddr) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*g = nil
		return nil
	}
	ip := net.ParseIP(string(b))
	if ip == nil {
		return fmt.Errorf("%q is not a GID", b)
	}
	*g = GIDAddr(ip.To16())
	return nil
}

// GID is one populated entry of a port's GID table.
type GID struct {
	Index  int     `json:"index"`
	GID    GIDAddr `json:"gid"`
	Type   GIDType `json:"type"`
	Netdev string  `json:"netdev,omitempty"`
}

// ipv4 reports the entry's IPv4 address when it is an IPv4-mapped GID
// (RoCE over IPv4), or nil.
func (g GID) ipv4() net.IP {
	if v4 := net.IP(g.GID).To4(); v4 != nil && g.Type != GIDTypeIB {
		return v4
	}
	return nil
}

// Port is one port of a device as the kernel reports it.
type Port struct {
	Num       int     `json:"port"`
	State     string  `json:"state"`      // e.g. ACTIVE, DOWN
	PhysState string  `json:"phys_state"` // e.g. LinkUp, Disabled
	LinkLayer string  `json:"link_layer"` // InfiniBand or Ethernet
	ActiveMTU int     `json:"active_mtu_bytes,omitempty"`
	MaxMTU    int     `json:"max_mtu_bytes,omitempty"`
	RateGbps  float64 `json:"rate_gbps"` // signalling rate, 10^9 bit/s, as the kernel reports it
	RateText  string  `json:"rate_text,omitempty"`
	LID       uint16  `json:"lid"`
	GIDs      []GID   `json:"gids"`
}

// Device is an RDMA device and its ports.
type Device struct {
	Name     string `json:"name"`
	Driver   string `json:"driver,omitempty"`
	Parent   string `json:"parent,omitempty"` // the netdev a software device (rxe, siw) sits on
	NodeGUID string `json:"node_guid"`
	NodeType string `json:"node_type,omitempty"`
	// Transport is what the device speaks: InfiniBand, RoCE or iWARP
	// (an RNIC node), which decides how it connects and what it runs.
	Transport Transport `json:"transport"`
	FWVer     string    `json:"fw_ver,omitempty"`
	Ports     []Port    `json:"ports"`
}

// Port returns the port numbered n.
func (d *Device) Port(n int) (*Port, error) {
	for i := range d.Ports {
		if d.Ports[i].Num == n {
			return &d.Ports[i], nil
		}
	}
	return nil, fmt.Errorf("device %s has no port %d (ports: %s)", d.Name, n, d.portList())
}

// Active reports whether the port can carry traffic: its state is
// ACTIVE, not DOWN, INIT or ARMED.
func (p *Port) Active() bool { return p.State == "ACTIVE" }

// FirstActive is the first of devs whose port numbered port is active:
// the device a command takes when none is named. ok is false when no
// device has one.
func FirstActive(devs []Device, port int) (name string, ok bool) {
	for i := range devs {
		if p, err := devs[i].Port(port); err == nil && p.Active() {
			return devs[i].Name, true
		}
	}
	return "", false
}

func (d *Device) portList() string {
	var s []string
	for _, p := range d.Ports {
		s = append(s, strconv.Itoa(p.Num))
	}
	return strings.Join(s, ", ")
}

// AutoGIDIndex asks SelectGID to choose.
const AutoGIDIndex = -1

// SelectGID returns the GID entry to use on the port: the one at index
// when index >= 0, otherwise the best one for RoCE. The best one is an
// IPv4-mapped GID before any other, a global one before a link-local one,
// RoCE v2 before v1, and then the lowest index: IPv4 RoCE v2 is what
// routed RoCE fabrics run, and an IPv6 link-local GID does not cross a
// router.
func (p *Port) SelectGID(index int) (GID, error) {
	if index >= 0 {
		for _, g := range p.GIDs {
			if g.Index == index {
				return g, nil
			}
		}
		return GID{}, fmt.Errorf("port %d has no GID at index %d (populated: %s)", p.Num, index, p.gidIndexList())
	}
	if len(p.GIDs) == 0 {
		return GID{}, fmt.Errorf("port %d has no populated GID (is the netdev up with an IP address?)", p.Num)
	}
	if p.LinkLayer == "InfiniBand" {
		return p.GIDs[0], nil
	}
	best := p.GIDs[0]
	for _, g := range p.GIDs[1:] {
		if gidScore(g) > gidScore(best) {
			best = g
		}
	}
	return best, nil
}

func gidScore(g GID) int {
	s := 0
	if g.ipv4() != nil {
		s += 4
	}
	if !net.IP(g.GID).IsLinkLocalUnicast() {
		s += 2
	}
	if g.Type == GIDTypeRoCEv2 {
		s++
	}
	return s
}

func (p *Port) gidIndexList() string {
	var s []string
	for _, g := range p.GIDs {
		s = append(s, strconv.Itoa(g.Index))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// ReadSysfsDevices lists every device under root (normally sysfs.Root)
// with the GID tables sysfs holds. The active MTU is not in sysfs; the
// verbs build fills it in.
func ReadSysfsDevices(root string) ([]Device, error) {
	sds, err := sysfs.ReadDevices(root, sysfs.Attributes|sysfs.GIDs)
	if err != nil {
		return nil, err
	}
	devs := make([]Device, 0, len(sds))
	for _, sd := range sds {
		d, err := deviceFromSysfs(sd)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// readSysfsDevice reads the device called name under sysfs.Root. The
// verbs build reads the GID table with one verbs call instead of a few
// file reads per slot, and so passes withGIDs false.
func readSysfsDevice(name string, withGIDs bool) (Device, error) {
	parts := sysfs.Attributes
	if withGIDs {
		parts |= sysfs.GIDs
	}
	return deviceFromSysfs(sysfs.ReadDevice(sysfs.Root, name, parts))
}

// deviceFromSysfs takes the device as sysfs shows it. A device whose
// ports cannot be listed, or whose GID table cannot be read, is an error:
// the verbs core could not choose a port or GID on it. Any other file
// that could not be read leaves its field empty.
func deviceFromSysfs(sd sysfs.Device) (Device, error) {
	d := Device{
		Name:     sd.Name,
		Driver:   sd.Driver,
		Parent:   sd.Parent,
		NodeGUID: sd.NodeGUID,
		NodeType: sd.NodeType,
		FWVer:    sd.FWVer,
	}
	for _, e := range sd.Errors {
		if e.Path == "ports" {
			return d, fmt.Errorf("reading ports of %s: %w", d.Name, e.Err)
		}
	}
	for _, sp := range sd.Ports {
		if err := sp.Err("gids"); err != nil {
			return d, fmt.Errorf("reading %s port %d: %w", d.Name, sp.Num, errors.Unwrap(err))
		}
		p := Port{
			Num:       sp.Num,
			State:     sp.State.Name,
			PhysState: sp.PhysState.Name,
			LinkLayer: sp.LinkLayer,
			RateGbps:  sp.RateGbps,
			RateText:  sp.RateText,
			LID:       sp.LID,
			GIDs:      make([]GID, 0, len(sp.GIDs)),
		}
		for _, g := range sp.GIDs {
			p.GIDs = append(p.GIDs, GID{
				Index:  g.Index,
				GID:    GIDAddr(g.GID),
				Type:   gidType(g.RoCEv2, p.LinkLayer),
				Netdev: g.Netdev,
			})
		}
		d.Ports = append(d.Ports, p)
	}
	d.Transport = TransportOf(d)
	return d, nil
}

// gidType names a GID table entry: sysfs calls InfiniBand and RoCE v1
// entries alike, and the port's link layer tells them apart.
func gidType(roceV2 bool, linkLayer string) GIDType {
	switch {
	case roceV2:
		return GIDTypeRoCEv2
	case linkLayer == "InfiniBand":
		return GIDTypeIB
	default:
		return GIDTypeRoCEv1
	}
}

// mtuBytes converts the verbs MTU enum (1..5) to bytes.
func mtuBytes(enum int) int {
	if enum < 1 || enum > 5 {
		return 0
	}
	return 128 << enum
}

// MTUEnum converts an MTU in bytes (256..4096, a power of two) to the verbs enum.
func MTUEnum(bytes int) (int, error) {
	for e := 1; e <= 5; e++ {
		if 128<<e == bytes {
			return e, nil
		}
	}
	return 0, fmt.Errorf("MTU %d is not one of 256, 512, 1024, 2048, 4096", bytes)
}
