package collector

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/sysfs"
)

// The counter categories of package portstats, as series of ours: the
// same names on every driver, so one query or alert covers mlx5, bnxt_re,
// irdma and rxe alike. The category label takes the names the runner's
// thresholds use (cnp_sent, seq_errors, ...).
var (
	transportEventsDesc = prometheus.NewDesc("rdmarun_port_transport_events_total",
		"Transport events of the RDMA port by category (retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked), "+
			"summed from the driver's hw_counters through rdmarun's name map for mlx5, bnxt_re, irdma and rxe. "+
			"A category the driver has no counter for has no series.",
		[]string{"device", "port", "category"}, nil)
	pauseFramesDesc = prometheus.NewDesc("rdmarun_port_pause_frames_total",
		"Pause frames of the RoCE port's netdev, from its ethtool statistics, per direction "+
			"(rx: received, the peer or switch stopped us; tx: sent, we stopped the peer) "+
			"and 802.1p priority (0-7 for PFC, link for 802.3x pause, all where the NIC counts only its total).",
		[]string{"device", "port", "direction", "priority"}, nil)
	pauseSecondsDesc = prometheus.NewDesc("rdmarun_port_pause_seconds_total",
		"Time the RoCE port's netdev was paused (rx) or kept its peer paused (tx), in seconds, "+
			"per 802.1p priority (0-7, or link), from the microseconds its ethtool statistics count; "+
			"only for drivers that keep paused time. Its rate is the fraction of time paused.",
		[]string{"device", "port", "direction", "priority"}, nil)
)

// transportCategories are the categories read from hw_counters; the
// pause ones are exported per priority instead, which sums to them.
var transportCategories = []string{
	portstats.Retransmits, portstats.SeqErrors, portstats.CNPSent, portstats.CNPHandled, portstats.ECNMarked,
}

// categories exports the port's counter categories. The netdev's
// ethtool statistics are read only when its driver has a pause map:
// reading them costs the driver a walk over hundreds of counters, and a
// veth or virtio netdev under soft-RoCE has no pause counters to find.
func (s *scrape) categories(d sysfs.Device, p sysfs.Port) {
	device, port := d.Name, strconv.Itoa(p.Num)
	src := portstats.Source{Driver: d.Driver, HWCounters: p.HWCounters}
	src.Netdev = sysfs.PortNetdev(s.root, d.Name, p.Num)
	src.NetdevDriver = sysfs.NetdevDriver(s.root, src.Netdev)
	if portstats.HasPauseMap(src.NetdevDriver) {
		stats, err := s.readEthtool(src.Netdev)
		if err != nil {
			s.errors++
			s.logger.Debug("skipping ethtool statistics", "netdev", src.Netdev, "device", device, "port", port, "err", err)
			src.EthtoolError = err.Error()
		} else {
			src.Ethtool = portstats.PauseOnly(src.NetdevDriver, stats)
		}
	}
	c := portstats.Categorize(src)
	for _, cat := range transportCategories {
		if v, ok := c.Values[cat]; ok {
			s.counter(transportEventsDesc, float64(v), device, port, cat)
		}
	}
	if len(c.Priorities) == 0 && c.Reported(portstats.PauseRx) {
		// The netdev counts pause only as a total, without saying which
		// priority it stopped: mlx5 firmware without the per-priority
		// group, or a port with neither PFC nor 802.3x pause enabled,
		// whose driver then lists only rx/tx_pause_ctrl_phy. Its frames
		// go out under priority "all" rather than nowhere, so the
		// per-priority series still sum to the category and
		// RDMAPauseFrameStorm still sees them. Its bound is then over
		// every priority together: it fires whenever the bound on any
		// one priority would, and may fire early when pause spreads
		// across several. No other series of the port has "all": the
		// category takes the total only when no per-priority or link
		// counter exists (portstats.Categorize).
		s.counter(pauseFramesDesc, float64(c.Values[portstats.PauseRx]), device, port, "rx", "all")
		s.counter(pauseFramesDesc, float64(c.Values[portstats.PauseTx]), device, port, "tx", "all")
	}
	for _, pp := range c.Priorities {
		s.counter(pauseFramesDesc, float64(pp.RxFrames), device, port, "rx", pp.Priority)
		s.counter(pauseFramesDesc, float64(pp.TxFrames), device, port, "tx", pp.Priority)
		if pp.RxUs != nil {
			s.counter(pauseSecondsDesc, float64(*pp.RxUs)/1e6, device, port, "rx", pp.Priority)
		}
		if pp.TxUs != nil {
			s.counter(pauseSecondsDesc, float64(*pp.TxUs)/1e6, device, port, "tx", pp.Priority)
		}
	}
}
