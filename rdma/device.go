package rdma

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SysfsRoot is where the kernel's RDMA device tree is read from. Tests
// point it at testdata fixtures.
const SysfsRoot = "/sys/class/infiniband"

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
	FWVer    string `json:"fw_ver,omitempty"`
	Ports    []Port `json:"ports"`
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

// ReadSysfsDevices reads every device under root (normally SysfsRoot).
// The active MTU is not in sysfs; the verbs build fills it in.
func ReadSysfsDevices(root string) ([]Device, error) {
	return readSysfsDevices(root, true)
}

// sysfsDeviceNames lists the device directories under root; none when
// root does not exist, as on a host without RDMA.
func sysfsDeviceNames(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func readSysfsDevices(root string, withGIDs bool) ([]Device, error) {
	names, err := sysfsDeviceNames(root)
	if err != nil {
		return nil, err
	}
	var devs []Device
	for _, name := range names {
		d, err := readSysfsDevice(filepath.Join(root, name), withGIDs)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// readSysfsDevice reads one device. Reading the GID table through sysfs
// costs a few file reads per slot, and ports have up to 1024 slots
// (seconds under emulation); the verbs build reads it with one call
// instead and passes withGIDs false.
func readSysfsDevice(dir string, withGIDs bool) (Device, error) {
	d := Device{
		Name:     filepath.Base(dir),
		NodeGUID: readTrim(dir, "node_guid"),
		NodeType: readTrim(dir, "node_type"),
		FWVer:    readTrim(dir, "fw_ver"),
		Parent:   readTrim(dir, "parent"),
	}
	if target, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		d.Driver = filepath.Base(target)
	} else if d.Parent != "" && strings.HasPrefix(d.Name, "rxe") {
		// Soft-RoCE devices have no bus device, so no driver link.
		d.Driver = "rdma_rxe"
	}
	ports, err := os.ReadDir(filepath.Join(dir, "ports"))
	if err != nil {
		return d, fmt.Errorf("reading ports of %s: %w", d.Name, err)
	}
	for _, pe := range ports {
		n, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		p, err := readSysfsPort(filepath.Join(dir, "ports", pe.Name()), n, withGIDs)
		if err != nil {
			return d, fmt.Errorf("reading %s port %d: %w", d.Name, n, err)
		}
		d.Ports = append(d.Ports, p)
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	return d, nil
}

func readSysfsPort(dir string, num int, withGIDs bool) (Port, error) {
	p := Port{
		Num:       num,
		GIDs:      []GID{},
		State:     stripEnumPrefix(readTrim(dir, "state")),
		PhysState: stripEnumPrefix(readTrim(dir, "phys_state")),
		LinkLayer: readTrim(dir, "link_layer"),
		RateText:  readTrim(dir, "rate"),
	}
	p.RateGbps = parseRate(p.RateText)
	if lid, err := strconv.ParseUint(strings.TrimPrefix(readTrim(dir, "lid"), "0x"), 16, 16); err == nil {
		p.LID = uint16(lid)
	}
	if !withGIDs {
		return p, nil
	}
	gids, err := os.ReadDir(filepath.Join(dir, "gids"))
	if err != nil {
		return p, err
	}
	idx := make([]int, 0, len(gids))
	for _, g := range gids {
		if n, err := strconv.Atoi(g.Name()); err == nil {
			idx = append(idx, n)
		}
	}
	sort.Ints(idx)
	for _, i := range idx {
		name := strconv.Itoa(i)
		raw, err := os.ReadFile(filepath.Join(dir, "gids", name))
		if err != nil {
			continue // the kernel answers EINVAL for some empty slots
		}
		ip := net.ParseIP(strings.TrimSpace(string(raw)))
		if ip == nil || ip.IsUnspecified() {
			continue
		}
		typ := readTrim(dir, "gid_attrs", "types", name)
		if typ == "" {
			continue // empty slot: the attribute read fails with EINVAL
		}
		p.GIDs = append(p.GIDs, GID{
			Index:  i,
			GID:    GIDAddr(ip.To16()),
			Type:   gidTypeFromSysfs(typ, p.LinkLayer),
			Netdev: readTrim(dir, "gid_attrs", "ndevs", name),
		})
	}
	return p, nil
}

func gidTypeFromSysfs(s, linkLayer string) GIDType {
	switch {
	case strings.Contains(s, "v2"):
		return GIDTypeRoCEv2
	case linkLayer == "InfiniBand":
		return GIDTypeIB
	default:
		return GIDTypeRoCEv1
	}
}

// stripEnumPrefix turns the kernel's "4: ACTIVE" into "ACTIVE".
func stripEnumPrefix(s string) string {
	if i := strings.Index(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// parseRate reads the kernel's "100 Gb/sec (4X EDR)" or "2.5 Gb/sec (1X SDR)".
func parseRate(s string) float64 {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "Gb/sec" {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

func readTrim(parts ...string) string {
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
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
