package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Port is one port of a device as sysfs shows it. Fields of a part that
// was not read, or of a file listed in Errors, hold their zero value.
type Port struct {
	Num       int
	State     Enum // 4: ACTIVE, 1: DOWN, ...
	PhysState Enum // 5: LinkUp, 3: Disabled, ...
	LinkLayer string
	RateText  string  // as the kernel writes it, "100 Gb/sec (4X EDR)"
	RateGbps  float64 // the signalling rate in 10^9 bit/s
	LID       uint16
	GIDs      []GID
	// Counters holds counters/, the InfiniBand PMA port counters, in the
	// files' own units (port_xmit_data and port_rcv_data count 4-byte
	// words). soft-RoCE (rxe) has no counters/ and leaves it empty.
	Counters map[string]uint64
	// HWCounters holds hw_counters/, the driver's own statistics. The
	// kernel caches them for hw_counters/lifespan milliseconds (10 by
	// default), which is itself a setting, not a count of events.
	HWCounters map[string]uint64
	// Errors lists the port's files that could not be used.
	Errors []FileError
}

// Err returns the error of file (as named in FileError.Path), or nil when
// it was read, or was not read at all.
func (p *Port) Err(file string) error {
	for _, e := range p.Errors {
		if e.Path == file {
			return e
		}
	}
	return nil
}

// GID is one populated entry of a port's GID table.
type GID struct {
	Index int
	GID   net.IP // 16 bytes
	// RoCEv2 is set for a "RoCE v2" entry; "IB/RoCE v1" names InfiniBand
	// and RoCE v1 entries alike, and the port's link layer tells them
	// apart.
	RoCEv2 bool
	Netdev string
}

// ReadPort reads parts of one port. Unlike ReadDevices, it fails when the
// port does not exist, since the caller named it.
func ReadPort(root, device string, port int, parts Parts) (Port, error) {
	return readNamedPort(os.DirFS(root), root, device, port, parts)
}

// readNamedPort reads through fsys so tests can inject the read errors
// that only real drivers produce; root only names paths in errors.
func readNamedPort(fsys fs.FS, root, device string, port int, parts Parts) (Port, error) {
	if device == "" || strings.Contains(device, "/") || !fs.ValidPath(device) {
		return Port{}, fmt.Errorf("invalid device name %q", device)
	}
	if port < 0 {
		return Port{}, fmt.Errorf("invalid port %d for device %s", port, device)
	}
	name := path.Join(device, "ports", strconv.Itoa(port))
	shown := filepath.Join(root, filepath.FromSlash(name))
	fi, err := fs.Stat(fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Port{}, fmt.Errorf("%s: %w; run `rdmarun devices` to list RDMA devices and their ports", shown, fs.ErrNotExist)
	case err != nil:
		return Port{}, fmt.Errorf("%s: %w", shown, cause(err))
	case !fi.IsDir():
		return Port{}, fmt.Errorf("%s is not a directory; run `rdmarun devices` to list RDMA devices and their ports", shown)
	}
	return readPort(&dir{fsys: fsys, name: name}, port, parts), nil
}

func readPort(d *dir, num int, parts Parts) Port {
	p := Port{Num: num}
	if parts&Attributes != 0 {
		p.State = parse(d, "state", true, parseEnum)
		p.PhysState = parse(d, "phys_state", true, parseEnum)
		p.LinkLayer, _ = d.read("link_layer", true)
		if s, ok := d.read("rate", true); ok {
			// The text is kept even when it does not parse: it is what
			// the kernel said.
			p.RateText = s
			if v, err := parseRate(s); err != nil {
				d.fail("rate", err)
			} else {
				p.RateGbps = v
			}
		}
		p.LID = parse(d, "lid", false, parseLID)
	}
	if parts&GIDs != 0 {
		p.GIDs = readGIDs(d)
	}
	if parts&Counters != 0 {
		p.Counters = readCounters(d, "counters")
		p.HWCounters = readCounters(d, "hw_counters")
	}
	p.Errors = d.errors
	return p
}

// readCounters reads every regular file in the port's counters/ or
// hw_counters/. A missing directory is normal: rxe has no counters/, and
// old kernels or drivers no hw_counters/.
func readCounters(d *dir, sub string) map[string]uint64 {
	out := map[string]uint64{}
	entries, err := fs.ReadDir(d.fsys, path.Join(d.name, sub))
	if errors.Is(err, fs.ErrNotExist) {
		return out
	}
	if err != nil {
		d.fail(sub, err)
		return out
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		file := sub + "/" + e.Name()
		if s, ok := d.read(file, true); ok {
			if v, err := parseCounter(s); err != nil {
				d.fail(file, err)
			} else {
				out[e.Name()] = v
			}
		}
	}
	return out
}

// readGIDs reads the populated entries of the port's GID table, by index.
// Empty slots are skipped, not reported: the kernel answers EINVAL for
// some of them, or shows the all-zero GID with an empty type.
func readGIDs(d *dir) []GID {
	gids := []GID{}
	entries, err := fs.ReadDir(d.fsys, path.Join(d.name, "gids"))
	if err != nil {
		d.fail("gids", err)
		return gids
	}
	idx := make([]int, 0, len(entries))
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			idx = append(idx, n)
		}
	}
	slices.Sort(idx)
	for _, i := range idx {
		name := strconv.Itoa(i)
		raw, err := fs.ReadFile(d.fsys, path.Join(d.name, "gids", name))
		if err != nil {
			continue
		}
		gid, ok := parseGID(string(raw))
		if !ok {
			continue
		}
		typ, _ := fs.ReadFile(d.fsys, path.Join(d.name, "gid_attrs", "types", name))
		v2, ok := parseGIDType(string(typ))
		if !ok {
			continue
		}
		netdev, _ := fs.ReadFile(d.fsys, path.Join(d.name, "gid_attrs", "ndevs", name))
		gids = append(gids, GID{Index: i, GID: gid, RoCEv2: v2, Netdev: strings.TrimSpace(string(netdev))})
	}
	return gids
}
