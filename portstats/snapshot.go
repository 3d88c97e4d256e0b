// Package portstats records what an RDMA port's sysfs counters and the
// process's CPU time did across a test case, so a result can show whether
// the fabric retried, dropped or paced the traffic it measured, and what
// each operation cost the host. The counters are read through sysfs.
package portstats

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/sysfs"
)

// Counters is one reading of a port's counters/ and hw_counters/ files.
type Counters struct {
	Device string
	Port   int
	// Time is taken when reading starts. It carries Go's monotonic clock
	// reading, so Sub between two snapshots is immune to wall-clock steps.
	Time time.Time
	// Counters holds counters/, the InfiniBand PMA port counters. Each file
	// costs the kernel a MAD to the device, so values are never cached.
	// soft-RoCE (rxe) has no counters/ directory and leaves this empty.
	Counters map[string]uint64
	// HWCounters holds hw_counters/, the driver's own statistics. The
	// kernel caches them for hw_counters/lifespan milliseconds (10 by
	// default), so a snapshot taken sooner than that after the previous one
	// may repeat its values.
	HWCounters map[string]uint64
	// Skipped lists, as "counters/NAME" or "hw_counters/NAME", the files
	// that could not be read (some drivers answer EINVAL or EOPNOTSUPP for
	// counters they do not implement) or did not hold a decimal number;
	// "counters" or "hw_counters" when a whole directory could not be
	// listed. Reporting them keeps a missing counter from looking like a
	// zero.
	Skipped []string
	// Driver is the device's driver, whose name map turns HWCounters into
	// categories. Netdev is the Ethernet device of a RoCE port (empty on
	// InfiniBand) and NetdevDriver its driver.
	Driver       string
	Netdev       string
	NetdevDriver string
	// Ethtool holds the netdev's pause statistics: the few of its ethtool
	// statistics the netdev driver's pause map names, nothing when the
	// driver has no map (veth under rxe, for one). EthtoolError says why
	// they could not be read.
	Ethtool      map[string]uint64
	EthtoolError string
}

// readEthtool is ethtool.Stats; tests replace it, since fixture trees
// have no netdevs to ask.
var readEthtool = ethtool.Stats

// readDriver is ethtool.Driver, and liveRoot the root whose netdevs are
// this host's: only there may a netdev be asked for its driver. Tests
// replace both.
var (
	readDriver = ethtool.Driver
	liveRoot   = sysfs.Root
)

// Port is one RDMA port whose counters are read again and again: a test's
// endpoint reads them before and after every run. What names its counters
// (the device's driver, the port's netdev and the netdev's driver) stays
// as it is while the port exists, so NewPort resolves it once instead of
// every snapshot paying three more sysfs lookups (and, for a virtual
// netdev, an ioctl). A netdev renamed or rebound under a live port, which
// is rare, shows as an EthtoolError until the holder makes a new Port.
type Port struct {
	root, device string
	port         int
	driver       string
	netdev       string
	netdevDriver string
	// lifespan is how long the kernel keeps a reading of hw_counters
	// before it asks the driver again (hw_counters/lifespan; 0 without
	// hw_counters). See SnapshotAfter.
	lifespan time.Duration
}

// NewPort resolves the drivers and netdev of one port under root, the
// directory listing the devices; an empty root means sysfs.Root. A port
// that does not exist is reported by Snapshot, as reading it fails.
func NewPort(root, device string, port int) Port {
	if root == "" {
		root = sysfs.Root
	}
	p := Port{root: root, device: device, port: port}
	p.driver = sysfs.DeviceDriver(root, device)
	p.netdev = sysfs.PortNetdev(root, device, port)
	p.netdevDriver = netdevDriver(root, p.netdev)
	p.lifespan = readLifespan(root, device, port)
	return p
}

// readLifespan reads the port's hw_counters/lifespan, in milliseconds; 0
// when the port has no hw_counters or the file does not parse.
func readLifespan(root, device string, port int) time.Duration {
	b, err := os.ReadFile(filepath.Join(root, device, "ports", strconv.Itoa(port), "hw_counters", "lifespan"))
	if err != nil {
		return 0
	}
	ms, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// jiffyMargin is added to a lifespan: the kernel compares in jiffies, up
// to 10 ms each (HZ 100), so a reading can outlive its lifespan by one.
const jiffyMargin = 10 * time.Millisecond

// SnapshotAfter reads the counters as they stood at t or later. The
// kernel answers a read of hw_counters from a reading it took up to
// lifespan (plus a jiffy) before, for whichever process asked then, so a
// snapshot soon after the traffic it should count can repeat the values
// from before it: on soft-RoCE (lifespan 12 ms), a run of a few
// milliseconds then showed no packets at all on one side, in 5 and in 14
// of 20 runs of peer's TestSessionWithoutCounters. SnapshotAfter waits
// until no reading older than t can be served; a run's after-snapshot
// passes the time its side ended.
func (p Port) SnapshotAfter(t time.Time) (Counters, error) {
	if p.lifespan > 0 {
		if wait := time.Until(t.Add(p.lifespan + jiffyMargin)); wait > 0 {
			time.Sleep(wait)
		}
	}
	return p.Snapshot()
}

// netdevDriver is the driver sysfs links the netdev's bus device to or,
// on the live host for a netdev that has none (veth and virtio_net under
// soft-RoCE), the name its driver reports, so the categories' reasons
// name it instead of "driver unknown". A fixture tree keeps sysfs's
// answer: its netdevs are not this host's.
func netdevDriver(root, netdev string) string {
	d := sysfs.NetdevDriver(root, netdev)
	if d != "" || netdev == "" || filepath.Clean(root) != liveRoot {
		return d
	}
	d, _ = readDriver(netdev)
	return d
}

// Snapshot reads the counters of one port under root, the directory
// listing the devices; an empty root means sysfs.Root. A missing port is
// an error; a file that cannot be read is listed in Skipped. A caller
// that reads the same port again should keep a Port instead.
func Snapshot(root, device string, port int) (Counters, error) {
	return NewPort(root, device, port).Snapshot()
}

// Snapshot reads the port's counters now.
func (p Port) Snapshot() (Counters, error) {
	start := time.Now()
	files, err := sysfs.ReadPort(p.root, p.device, p.port, sysfs.Counters)
	if err != nil {
		return Counters{}, fmt.Errorf("portstats: %w", err)
	}
	c := Counters{
		Device:       p.device,
		Port:         p.port,
		Time:         start,
		Counters:     files.Counters,
		HWCounters:   files.HWCounters,
		Driver:       p.driver,
		Netdev:       p.netdev,
		NetdevDriver: p.netdevDriver,
	}
	if stats, err := ReadPause(c.NetdevDriver, c.Netdev); err != nil {
		c.EthtoolError = err.Error()
	} else {
		c.Ethtool = stats
	}
	for _, e := range files.Errors {
		c.Skipped = append(c.Skipped, e.Path)
	}
	slices.Sort(c.Skipped)
	return c, nil
}

// ReadPause reads the pause statistics of a netdev whose driver is
// netdevDriver (see PauseOnly). It returns nil, nil for a driver without
// a pause map, whose statistics say nothing about pause, without asking
// the device.
func ReadPause(netdevDriver, netdev string) (map[string]uint64, error) {
	if !HasPauseMap(netdevDriver) {
		return nil, nil
	}
	stats, err := readEthtool(netdev)
	if err != nil {
		return nil, err
	}
	return PauseOnly(netdevDriver, stats), nil
}

// PauseOnly keeps, of a netdev's ethtool statistics, those its driver's
// pause map names: the few Categorize reads of the hundreds a NIC
// reports. A driver without a map keeps none.
func PauseOnly(netdevDriver string, stats map[string]uint64) map[string]uint64 {
	keep, ok := pauseNames[netdevDriver]
	if !ok {
		return nil
	}
	out := map[string]uint64{}
	for name, v := range stats {
		if keep[name] {
			out[name] = v
		}
	}
	return out
}

// Categories sums the snapshot's counters since boot into categories.
func (c Counters) Categories() *Categories {
	return Categorize(Source{
		Driver: c.Driver, Netdev: c.Netdev, NetdevDriver: c.NetdevDriver,
		HWCounters: c.HWCounters, Ethtool: c.Ethtool, EthtoolError: c.EthtoolError,
	})
}
