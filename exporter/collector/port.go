// Package collector holds rdmarun_exporter's scrape-time collectors: data that
// the kernel already keeps and that is read fresh at every scrape, as
// opposed to the probe results the scheduler records between scrapes.
package collector

import (
	"log/slog"
	"path/filepath"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/sysfs"
)

// The label names match node_exporter's infiniband collector, so a query
// can join these series with node_infiniband_* on (device, port).
var portLabels = []string{"device", "port"}

var (
	portStateDesc = prometheus.NewDesc("rdmarun_port_state",
		"State of the RDMA port as the kernel numbers it: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.",
		portLabels, nil)
	portUpDesc = prometheus.NewDesc("rdmarun_port_up",
		"1 when the RDMA port's state is ACTIVE, 0 otherwise.",
		portLabels, nil)
	portPhysStateDesc = prometheus.NewDesc("rdmarun_port_physical_state",
		"Physical state of the RDMA port as the kernel numbers it: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		portLabels, nil)
	portRateDesc = prometheus.NewDesc("rdmarun_port_rate_bytes_per_second",
		"Signalling rate of the RDMA port as the kernel reports it, in bytes per second.",
		portLabels, nil)
	portInfoDesc = prometheus.NewDesc("rdmarun_port_info",
		"Link layer, driver and node GUID of the RDMA port; always 1.",
		[]string{"device", "port", "link_layer", "driver", "node_guid"}, nil)
	portCountersDesc = prometheus.NewDesc("rdmarun_port_counters_total",
		"Raw value of the port's counters/<name> file, the InfiniBand port counters; port_xmit_data and port_rcv_data count 4-byte words.",
		[]string{"device", "port", "name"}, nil)
	portHWCountersDesc = prometheus.NewDesc("rdmarun_port_hw_counters_total",
		"Raw value of the port's hw_counters/<name> file, the driver's own statistics.",
		[]string{"device", "port", "name"}, nil)
	portTransmitBytesDesc = prometheus.NewDesc("rdmarun_port_transmit_bytes_total",
		"Bytes transmitted by the RDMA port, from counters/port_xmit_data.",
		portLabels, nil)
	portReceiveBytesDesc = prometheus.NewDesc("rdmarun_port_receive_bytes_total",
		"Bytes received by the RDMA port, from counters/port_rcv_data.",
		portLabels, nil)
	portErrorsDesc = prometheus.NewDesc("rdmarun_port_collector_errors",
		"Number of sysfs files, and of netdevs' ethtool statistics, the port collector could not read or parse during this scrape.",
		nil, nil)
)

// stateActive is the kernel's IB_PORT_ACTIVE.
const stateActive = 4

// PortCollector reports the state, rate and counters of every RDMA port,
// as package sysfs reads them. It keeps no state between scrapes, so
// devices that appear or vanish (rxe links added and removed, a
// hot-unplugged card) show up at the next scrape without a restart.
//
// A file that cannot be read or parsed costs only its own series, and is
// counted in rdmarun_port_collector_errors.
type PortCollector struct {
	root   string
	logger *slog.Logger
	// ReadEthtool reads a netdev's ethtool statistics, for the pause
	// counters of RoCE ports; ethtool.Stats unless set before the
	// collector is registered. Tests give it saved statistics, since a
	// fixture tree has no netdevs to ask.
	ReadEthtool func(netdev string) (map[string]uint64, error)
}

// NewPortCollector returns a collector reading sysfsRoot, the infiniband
// class directory, normally sysfs.Root (a containerised exporter's
// /host/sys/class/infiniband, or a test fixture). A nil logger discards.
func NewPortCollector(sysfsRoot string, logger *slog.Logger) *PortCollector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PortCollector{root: sysfsRoot, logger: logger, ReadEthtool: ethtool.Stats}
}

// Describe implements prometheus.Collector.
func (c *PortCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		portStateDesc, portUpDesc, portPhysStateDesc, portRateDesc, portInfoDesc,
		portCountersDesc, portHWCountersDesc, portTransmitBytesDesc, portReceiveBytesDesc,
		transportEventsDesc, pauseFramesDesc, pauseSecondsDesc, portErrorsDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PortCollector) Collect(ch chan<- prometheus.Metric) {
	s := &scrape{ch: ch, logger: c.logger, root: c.root, readEthtool: c.ReadEthtool}
	devs, err := sysfs.ReadDevices(c.root, sysfs.Attributes|sysfs.Counters)
	if err != nil {
		s.fail(c.root, err)
	}
	for _, d := range devs {
		for _, e := range d.Errors {
			s.fail(filepath.Join(c.root, d.Name, e.Path), e.Err)
		}
		for _, p := range d.Ports {
			s.port(filepath.Join(c.root, d.Name, "ports", strconv.Itoa(p.Num)), d, p)
		}
	}
	ch <- prometheus.MustNewConstMetric(portErrorsDesc, prometheus.GaugeValue, float64(s.errors))
}

// scrape carries one Collect call's state, so concurrent scrapes share
// nothing.
type scrape struct {
	ch          chan<- prometheus.Metric
	logger      *slog.Logger
	root        string
	readEthtool func(netdev string) (map[string]uint64, error)
	errors      int
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

// lifespan is how long, in milliseconds, the kernel caches the other
// hw_counters: a setting, not a count of events, so neither its value nor
// a malformed file is exported.
const lifespan = "lifespan"

// port exports one port; dir only names its files in the log.
func (s *scrape) port(dir string, d sysfs.Device, p sysfs.Port) {
	device, port := d.Name, strconv.Itoa(p.Num)
	for _, e := range p.Errors {
		if e.Path != "hw_counters/"+lifespan {
			s.fail(filepath.Join(dir, e.Path), e.Err)
		}
	}
	if p.Err("state") == nil {
		s.gauge(portStateDesc, float64(p.State.Num), device, port)
		up := 0.0
		if p.State.Num == stateActive {
			up = 1
		}
		s.gauge(portUpDesc, up, device, port)
	}
	if p.Err("phys_state") == nil {
		s.gauge(portPhysStateDesc, float64(p.PhysState.Num), device, port)
	}
	if p.Err("rate") == nil {
		s.gauge(portRateDesc, p.RateGbps*1e9/8, device, port)
	}
	s.gauge(portInfoDesc, 1, device, port, p.LinkLayer, d.Driver, d.NodeGUID)

	for name, v := range p.Counters {
		s.counter(portCountersDesc, float64(v), device, port, name)
	}
	for name, v := range p.HWCounters {
		if name != lifespan {
			s.counter(portHWCountersDesc, float64(v), device, port, name)
		}
	}
	// The PMA data counters count 4-byte words; bytes let dashboards put
	// RDMA traffic next to node_network_*_bytes_total without a factor.
	if v, ok := p.Counters["port_xmit_data"]; ok {
		s.counter(portTransmitBytesDesc, float64(v)*4, device, port)
	}
	if v, ok := p.Counters["port_rcv_data"]; ok {
		s.counter(portReceiveBytesDesc, float64(v)*4, device, port)
	}
	s.categories(d, p)
}
