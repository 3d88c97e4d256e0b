// Package collector holds rdma_exporter's scrape-time collectors: data that
// the kernel already keeps and that is read fresh at every scrape, as
// opposed to the probe results the scheduler records between scrapes.
package collector

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// The label names match node_exporter's infiniband collector, so a query
// can join these series with node_infiniband_* on (device, port).
var portLabels = []string{"device", "port"}

var (
	portStateDesc = prometheus.NewDesc("rdma_port_state",
		"State of the RDMA port as the kernel numbers it: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.",
		portLabels, nil)
	portUpDesc = prometheus.NewDesc("rdma_port_up",
		"1 when the RDMA port's state is ACTIVE, 0 otherwise.",
		portLabels, nil)
	portPhysStateDesc = prometheus.NewDesc("rdma_port_physical_state",
		"Physical state of the RDMA port as the kernel numbers it: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		portLabels, nil)
	portRateDesc = prometheus.NewDesc("rdma_port_rate_bytes_per_second",
		"Signalling rate of the RDMA port as the kernel reports it, in bytes per second.",
		portLabels, nil)
	portInfoDesc = prometheus.NewDesc("rdma_port_info",
		"Link layer, driver and node GUID of the RDMA port; always 1.",
		[]string{"device", "port", "link_layer", "driver", "node_guid"}, nil)
	portCountersDesc = prometheus.NewDesc("rdma_port_counters_total",
		"Raw value of the port's counters/<name> file, the InfiniBand port counters; port_xmit_data and port_rcv_data count 4-byte words.",
		[]string{"device", "port", "name"}, nil)
	portHWCountersDesc = prometheus.NewDesc("rdma_port_hw_counters_total",
		"Raw value of the port's hw_counters/<name> file, the driver's own statistics.",
		[]string{"device", "port", "name"}, nil)
	portTransmitBytesDesc = prometheus.NewDesc("rdma_port_transmit_bytes_total",
		"Bytes transmitted by the RDMA port, from counters/port_xmit_data.",
		portLabels, nil)
	portReceiveBytesDesc = prometheus.NewDesc("rdma_port_receive_bytes_total",
		"Bytes received by the RDMA port, from counters/port_rcv_data.",
		portLabels, nil)
	portErrorsDesc = prometheus.NewDesc("rdma_port_collector_errors",
		"Number of sysfs files the port collector could not read or parse during this scrape.",
		nil, nil)
)

// stateActive is the kernel's IB_PORT_ACTIVE.
const stateActive = 4

// PortCollector reports the state, rate and counters of every RDMA port.
// It keeps no state between scrapes, so devices that appear or vanish
// (rxe links added and removed, a hot-unplugged card) show up at the next
// scrape without a restart.
//
// It reads sysfs in two ways. Where prometheus/procfs parses a file (the
// device list, port numbers, state, phys_state, rate, link_layer, node_guid
// and the counters/ files it names), the value comes from procfs, the
// parser node_exporter's infiniband collector shares. Everything procfs
// does not name is read by the collector's own reader, file by file: every
// hw_counters/ file and any counters/ file procfs does not know. The own
// reader also takes over a whole device when procfs fails on it, since
// procfs gives up on a device at its first unreadable or malformed file
// whereas this collector exports all the rest and counts each bad file in
// rdma_port_collector_errors.
type PortCollector struct {
	root string
	// mount is the sysfs mount point for procfs, derived from root; empty
	// when root is not a .../class/infiniband directory, and then the own
	// reader reads everything.
	mount  string
	logger *slog.Logger
}

// NewPortCollector returns a collector reading sysfsRoot, the infiniband
// class directory, normally /sys/class/infiniband. A nil logger discards.
//
// procfs takes the sysfs mount point and appends class/infiniband itself,
// so it is used only when sysfsRoot ends in class/infiniband (a containerised
// exporter's /host/sys/class/infiniband gives /host/sys). Any other root,
// such as a test fixture holding device directories directly, is read by the
// own reader alone; both produce the same series.
func NewPortCollector(sysfsRoot string, logger *slog.Logger) *PortCollector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mount, _ := procfsMountPoint(sysfsRoot)
	return &PortCollector{root: sysfsRoot, mount: mount, logger: logger}
}

// procfsMountPoint returns the sysfs mount point that root is
// class/infiniband under, or false when root does not end that way.
func procfsMountPoint(root string) (string, bool) {
	dir := filepath.Clean(root)
	if filepath.Base(dir) != "infiniband" {
		return "", false
	}
	dir = filepath.Dir(dir)
	if filepath.Base(dir) != "class" {
		return "", false
	}
	return filepath.Dir(dir), true
}

// Describe implements prometheus.Collector.
func (c *PortCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		portStateDesc, portUpDesc, portPhysStateDesc, portRateDesc, portInfoDesc,
		portCountersDesc, portHWCountersDesc, portTransmitBytesDesc, portReceiveBytesDesc,
		portErrorsDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PortCollector) Collect(ch chan<- prometheus.Metric) {
	s := &scrape{ch: ch, logger: c.logger}
	if c.mount == "" || !s.procfsDevices(c.mount, c.root) {
		s.devices(c.root)
	}
	ch <- prometheus.MustNewConstMetric(portErrorsDesc, prometheus.GaugeValue, float64(s.errors))
}

// scrape carries one Collect call's state, so concurrent scrapes share
// nothing.
type scrape struct {
	ch     chan<- prometheus.Metric
	logger *slog.Logger
	errors int
}

// fail counts a file that could not be used. It logs at debug level only:
// a broken file fails at every scrape, and the errors gauge is the alarm.
func (s *scrape) fail(path string, err error) {
	s.errors++
	s.logger.Debug("skipping sysfs file", "path", path, "err", err)
}

func (s *scrape) gauge(d *prometheus.Desc, v float64, labels ...string) {
	s.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (s *scrape) counter(d *prometheus.Desc, v float64, labels ...string) {
	s.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// state exports the port's logical state and whether it is up.
func (s *scrape) state(v int, device, port string) {
	s.gauge(portStateDesc, float64(v), device, port)
	up := 0.0
	if v == stateActive {
		up = 1
	}
	s.gauge(portUpDesc, up, device, port)
}

// counters exports one port's counters/ values, in the files' own units,
// and its hw_counters/ values.
func (s *scrape) counters(device, port string, counters, hwCounters map[string]uint64) {
	for name, v := range counters {
		s.counter(portCountersDesc, float64(v), device, port, name)
	}
	for name, v := range hwCounters {
		s.counter(portHWCountersDesc, float64(v), device, port, name)
	}
	// The PMA data counters count 4-byte words; bytes let dashboards put
	// RDMA traffic next to node_network_*_bytes_total without a factor.
	if v, ok := counters["port_xmit_data"]; ok {
		s.counter(portTransmitBytesDesc, float64(v)*4, device, port)
	}
	if v, ok := counters["port_rcv_data"]; ok {
		s.counter(portReceiveBytesDesc, float64(v)*4, device, port)
	}
}

// From here on is the own reader: it reads every file itself and counts
// each one it cannot use, so one bad file costs only its own series.

func (s *scrape) devices(root string) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return // a host without RDMA devices is healthy, not broken
	}
	if err != nil {
		s.fail(root, err)
		return
	}
	for _, e := range entries {
		s.device(root, e.Name())
	}
}

func (s *scrape) device(root, name string) {
	dir := filepath.Join(root, name)
	guid, _ := s.readString(filepath.Join(dir, "node_guid"))
	driver := driverName(dir, name)
	portsDir := filepath.Join(dir, "ports")
	ports, err := os.ReadDir(portsDir)
	if err != nil {
		s.fail(portsDir, err)
		return
	}
	for _, p := range ports {
		n, err := strconv.Atoi(p.Name())
		if err != nil || n < 0 {
			continue
		}
		s.port(dir, name, n, guid, driver)
	}
}

func (s *scrape) port(deviceDir, device string, num int, guid, driver string) {
	port := strconv.Itoa(num)
	dir := filepath.Join(deviceDir, "ports", port)

	if v, ok := s.readEnum(filepath.Join(dir, "state")); ok {
		s.state(v, device, port)
	}
	if v, ok := s.readEnum(filepath.Join(dir, "phys_state")); ok {
		s.gauge(portPhysStateDesc, float64(v), device, port)
	}
	if v, ok := s.readRate(filepath.Join(dir, "rate")); ok {
		s.gauge(portRateDesc, v, device, port)
	}
	linkLayer, _ := s.readString(filepath.Join(dir, "link_layer"))
	s.gauge(portInfoDesc, 1, device, port, linkLayer, driver, guid)

	countersDir := filepath.Join(dir, "counters")
	counters := map[string]uint64{}
	for _, name := range s.counterFiles(countersDir) {
		if v, ok := s.readCounter(filepath.Join(countersDir, name)); ok {
			counters[name] = v
		}
	}
	s.counters(device, port, counters, s.hwCounters(dir))
}

// hwCounters reads every file in the port's hw_counters/. Both ways of
// reading a port use it: procfs names only some of mlx5's hw_counters and
// none of rxe's, and reading them all here keeps one set of rules (and one
// error count) for the whole directory.
func (s *scrape) hwCounters(portDir string) map[string]uint64 {
	dir := filepath.Join(portDir, "hw_counters")
	out := map[string]uint64{}
	for _, name := range s.counterFiles(dir) {
		// lifespan is how long, in milliseconds, the kernel caches the
		// other hw_counters: a setting, not a count of events.
		if name == "lifespan" {
			continue
		}
		if v, ok := s.readCounter(filepath.Join(dir, name)); ok {
			out[name] = v
		}
	}
	return out
}

// counterFiles lists the regular files in a counters/ or hw_counters/
// directory. A missing directory is normal, not an error: rxe has no
// counters/, and old kernels or drivers no hw_counters/.
func (s *scrape) counterFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.fail(dir, err)
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names
}

// readCounter reads one counter file, a decimal number. Some drivers answer
// EINVAL or EOPNOTSUPP for counters they do not implement; such a file is
// counted rather than exported as zero, which would hide that it is missing.
func (s *scrape) readCounter(path string) (uint64, bool) {
	t, ok := s.readString(path)
	if !ok {
		return 0, false
	}
	// ParseUint fails on an empty file, a sign and a value beyond 64 bits;
	// the maximum it returns for the last is dropped too, since a clamped
	// counter would make a bogus rate.
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		s.fail(path, errors.New("not a decimal counter: "+strconv.Quote(t)))
		return 0, false
	}
	return v, true
}

func (s *scrape) readString(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		s.fail(path, err)
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// readEnum reads the number from the kernel's "4: ACTIVE"; the number is
// what the IB spec defines, while the names have changed across kernels.
func (s *scrape) readEnum(path string) (int, bool) {
	t, ok := s.readString(path)
	if !ok {
		return 0, false
	}
	num, _, found := strings.Cut(t, ":")
	v, err := strconv.Atoi(num)
	if !found || err != nil {
		s.fail(path, errors.New("not of the form \"N: NAME\": "+strconv.Quote(t)))
		return 0, false
	}
	return v, true
}

// readRate reads the kernel's "100 Gb/sec (4X EDR)" as bytes per second.
func (s *scrape) readRate(path string) (float64, bool) {
	t, ok := s.readString(path)
	if !ok {
		return 0, false
	}
	f := strings.Fields(t)
	if len(f) >= 2 && f[1] == "Gb/sec" {
		if v, err := strconv.ParseFloat(f[0], 64); err == nil && v >= 0 {
			return v * 1e9 / 8, true
		}
	}
	s.fail(path, errors.New("not of the form \"N Gb/sec\": "+strconv.Quote(t)))
	return 0, false
}

// driverName is the kernel module behind the device. Software devices (rxe,
// siw) have no bus device and so no driver link; their parent file names
// the netdev they sit on, and the kernel's own naming gives the module.
// An unknown driver is left empty rather than counted as an error, since
// its absence is normal. procfs does not read it, so both ways of reading
// a device use this.
func driverName(dir, name string) string {
	if target, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		return filepath.Base(target)
	}
	if _, err := os.Stat(filepath.Join(dir, "parent")); err != nil {
		return ""
	}
	switch {
	case strings.HasPrefix(name, "rxe"):
		return "rdma_rxe"
	case strings.HasPrefix(name, "siw"):
		return "siw"
	}
	return ""
}
