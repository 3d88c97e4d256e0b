package collector

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/prometheus/procfs/sysfs"
)

// procfsFallbackMsg is logged, at debug level, for each device that the own
// reader reads because procfs failed on it.
const procfsFallbackMsg = "procfs could not read the device; reading it file by file"

// procfsDevices reads the devices under mount/class/infiniband (root is
// that same directory) through procfs. It reports false, having exported
// nothing, when procfs cannot list the devices; the own reader then reads
// the whole tree, and tells a missing directory (no RDMA, healthy) from an
// unreadable one (counted) just as it does without procfs.
//
// Each device is asked for separately rather than through InfiniBandClass,
// which fails the whole class on one bad device.
func (s *scrape) procfsDevices(mount, root string) bool {
	fsys, err := sysfs.NewFS(mount)
	if err != nil {
		return false
	}
	names, err := fsys.InfiniBandClassDevices()
	if err != nil {
		return false
	}
	for _, name := range names {
		dev, err := fsys.InfiniBandDevice(name)
		if err != nil {
			// procfs stops at the first file it cannot read or parse, and
			// also at things this collector tolerates on purpose (no
			// fw_ver, a non-numeric entry in ports/, a malformed
			// hw_counters/lifespan). The own reader then reads the device
			// again and counts each file it cannot use; counting procfs's
			// failure as well would count one broken file twice, or a file
			// this collector does not export as broken.
			s.logger.Debug(procfsFallbackMsg, "device", name, "err", err)
			s.device(root, name)
			continue
		}
		s.procfsDevice(filepath.Join(root, name), dev)
	}
	return true
}

func (s *scrape) procfsDevice(dir string, dev *sysfs.InfiniBandDevice) {
	// procfs leaves NodeGUID empty, without an error, when node_guid is
	// missing; the own reader counts that, since every kernel device has
	// one. Only an empty GUID needs the extra look.
	if dev.NodeGUID == "" {
		if _, err := os.Stat(filepath.Join(dir, "node_guid")); err != nil {
			s.fail(filepath.Join(dir, "node_guid"), err)
		}
	}
	driver := driverName(dir, dev.Name)
	for _, num := range slices.Sorted(maps.Keys(dev.Ports)) {
		p := dev.Ports[num]
		port := strconv.FormatUint(uint64(num), 10)
		portDir := filepath.Join(dir, "ports", port)

		s.state(int(p.StateID), dev.Name, port)
		s.gauge(portPhysStateDesc, float64(p.PhysStateID), dev.Name, port)
		s.gauge(portRateDesc, float64(p.Rate), dev.Name, port)
		s.gauge(portInfoDesc, 1, dev.Name, port, p.LinkLayer, driver, dev.NodeGUID)
		s.counters(dev.Name, port, s.procfsCounters(portDir, &p.Counters), s.hwCounters(portDir))
	}
}

// procfsCounters returns the port's counters/ values in the files' own
// units. Files procfs parses come from c; any other file in counters/ is
// read by the own reader. procfs has already read every file there, so
// those are read twice, each a MAD to the device; procfs names every
// counter current kernels create, so this is the exception.
func (s *scrape) procfsCounters(portDir string, c *sysfs.InfiniBandCounters) map[string]uint64 {
	dir := filepath.Join(portDir, "counters")
	out := map[string]uint64{}
	for _, name := range s.counterFiles(dir) {
		path := filepath.Join(dir, name)
		f, ok := procfsCounterFields[name]
		if !ok {
			if v, ok := s.readCounter(path); ok {
				out[name] = v
			}
			continue
		}
		v := f.get(c)
		if v == nil {
			// procfs skips, without failing, a counter it could not read
			// for EINVAL, EOPNOTSUPP or EACCES (drivers answer so for
			// counters they lack) or that reads "N/A (no PMA)". Counting
			// it keeps a missing counter from looking like no problem, as
			// the own reader does.
			s.fail(path, errors.New("procfs could not read or parse it"))
			continue
		}
		if f.bytes {
			out[name] = *v / 4
		} else {
			out[name] = *v
		}
	}
	return out
}

// procfsCounterField is where procfs keeps one counters/ file's value.
type procfsCounterField struct {
	get func(*sysfs.InfiniBandCounters) *uint64
	// bytes marks the data counters, which procfs multiplies by 4 to give
	// bytes; the file, and rdma_port_counters_total, hold 4-byte words.
	// Dividing is exact below 2^62 words, some 18 EB of traffic.
	bytes bool
}

// procfsCounterFields lists the counters/ files procfs parses. counters_ext/
// (kernels before 4.5) is left out, as the own reader never read it either.
var procfsCounterFields = map[string]procfsCounterField{
	"excessive_buffer_overrun_errors": {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.ExcessiveBufferOverrunErrors }},
	"link_downed":                     {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.LinkDowned }},
	"link_error_recovery":             {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.LinkErrorRecovery }},
	"local_link_integrity_errors":     {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.LocalLinkIntegrityErrors }},
	"multicast_rcv_packets":           {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.MulticastRcvPackets }},
	"multicast_xmit_packets":          {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.MulticastXmitPackets }},
	"port_rcv_constraint_errors":      {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortRcvConstraintErrors }},
	"port_rcv_data":                   {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortRcvData }, bytes: true},
	"port_rcv_discards":               {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortRcvDiscards }},
	"port_rcv_errors":                 {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortRcvErrors }},
	"port_rcv_packets":                {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortRcvPackets }},
	"port_rcv_remote_physical_errors": {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortRcvRemotePhysicalErrors }},
	"port_rcv_switch_relay_errors":    {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortRcvSwitchRelayErrors }},
	"port_xmit_constraint_errors":     {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortXmitConstraintErrors }},
	"port_xmit_data":                  {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortXmitData }, bytes: true},
	"port_xmit_discards":              {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortXmitDiscards }},
	"port_xmit_packets":               {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortXmitPackets }},
	"port_xmit_wait":                  {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.PortXmitWait }},
	"symbol_error":                    {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.SymbolError }},
	"unicast_rcv_packets":             {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.UnicastRcvPackets }},
	"unicast_xmit_packets":            {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.UnicastXmitPackets }},
	"VL15_dropped":                    {get: func(c *sysfs.InfiniBandCounters) *uint64 { return c.VL15Dropped }},
}
