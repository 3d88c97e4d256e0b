package portstats

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// The categories: named groups over the raw counters, the same on every
// driver, so a threshold or an alert can say pause_rx == 0 without
// knowing whether the NIC calls it rx_prio3_pause or
// rx_pfc_ena_frames_pri3. The names are also the thresholds' names.
const (
	Retransmits = "retransmits"
	SeqErrors   = "seq_errors"
	CNPSent     = "cnp_sent"
	CNPHandled  = "cnp_handled"
	ECNMarked   = "ecn_marked"
	PauseRx     = "pause_rx"    // pause frames received: the peer stopped us
	PauseTx     = "pause_tx"    // pause frames sent: we stopped the peer
	PauseRxUs   = "pause_rx_us" // time we were stopped, microseconds
	PauseTxUs   = "pause_tx_us" // time we asked the peer to stop, microseconds
)

// CategoryNames lists the categories in the order reports show them.
var CategoryNames = []string{Retransmits, SeqErrors, CNPSent, CNPHandled, ECNMarked, PauseRx, PauseTx, PauseRxUs, PauseTxUs}

// Categories is what the counters of one port say in the categories'
// terms, over a test (from Deltas) or since boot (from a snapshot).
type Categories struct {
	// Driver is the RDMA device's driver, whose map named the transport
	// counters; Netdev and NetdevDriver are the Ethernet device under a
	// RoCE port, whose ethtool statistics hold the pause counters.
	Driver       string `json:"driver,omitempty"`
	Netdev       string `json:"netdev,omitempty"`
	NetdevDriver string `json:"netdev_driver,omitempty"`
	// Values holds the categories the port reports. A category missing
	// here is in Unreported: the driver has no counter for it, which is
	// not the same as zero.
	Values     map[string]uint64 `json:"values,omitempty"`
	Unreported []string          `json:"unreported,omitempty"`
	// Priorities breaks pause down by 802.1p priority ("0" to "7") and
	// "link" for 802.3x pause, which stops all priorities at once.
	Priorities []PriorityPause `json:"priorities,omitempty"`
	// EthtoolError says why the netdev's statistics could not be read.
	EthtoolError string `json:"ethtool_error,omitempty"`
}

// PriorityPause is the pause counted on one priority. A duration the
// driver does not keep is nil.
type PriorityPause struct {
	Priority string  `json:"priority"`
	RxFrames uint64  `json:"rx_frames"`
	TxFrames uint64  `json:"tx_frames"`
	RxUs     *uint64 `json:"rx_us,omitempty"`
	TxUs     *uint64 `json:"tx_us,omitempty"`
}

// Source is what Categorize reads: counters and ethtool statistics,
// absolute or deltas, with the names of the drivers that chose them.
type Source struct {
	Driver       string
	Netdev       string
	NetdevDriver string
	HWCounters   map[string]uint64
	Ethtool      map[string]uint64
	EthtoolError string
}

// Categorize sums the source's counters into categories through the
// drivers' name maps.
func Categorize(s Source) *Categories {
	c := &Categories{
		Driver: s.Driver, Netdev: s.Netdev, NetdevDriver: s.NetdevDriver,
		Values: map[string]uint64{}, EthtoolError: s.EthtoolError,
	}
	if m, ok := counterMaps[family(s.Driver)]; ok {
		for _, cat := range []string{Retransmits, SeqErrors, CNPSent, CNPHandled, ECNMarked} {
			if v, ok := sum(s.HWCounters, m[cat]); ok {
				c.Values[cat] = v
			}
		}
	}
	if m, ok := pauseMaps[s.NetdevDriver]; ok && s.EthtoolError == "" {
		c.pause(m, s.Ethtool)
	}
	for _, cat := range CategoryNames {
		if _, ok := c.Values[cat]; !ok {
			c.Unreported = append(c.Unreported, cat)
		}
	}
	return c
}

func (c *Categories) pause(m pauseMap, stats map[string]uint64) {
	var rx, tx, rxUs, txUs uint64
	var frames, durations bool
	add := func(prio, rxName, txName, rxUsName, txUsName string) {
		r, okR := stats[rxName]
		t, okT := stats[txName]
		if !okR && !okT {
			return
		}
		frames = true
		rx += r
		tx += t
		p := PriorityPause{Priority: prio, RxFrames: r, TxFrames: t}
		if v, ok := stats[rxUsName]; ok && rxUsName != "" {
			p.RxUs, rxUs, durations = &v, rxUs+v, true
		}
		if v, ok := stats[txUsName]; ok && txUsName != "" {
			p.TxUs, txUs, durations = &v, txUs+v, true
		}
		c.Priorities = append(c.Priorities, p)
	}
	for p := range priorities {
		add(strconv.Itoa(p), fmt.Sprintf(m.rxPrio, p), fmt.Sprintf(m.txPrio, p), prioName(m.rxPrioUs, p), prioName(m.txPrioUs, p))
	}
	if m.rxLink != "" {
		add("link", m.rxLink, m.txLink, m.rxLinkUs, m.txLinkUs)
	}
	if !frames && m.rxTotal != "" {
		// Only a total exists (older firmware, or mlx5 with neither PFC
		// nor 802.3x pause enabled): it counts the frames, without
		// saying which priority they stopped.
		r, okR := stats[m.rxTotal]
		t, okT := stats[m.txTotal]
		frames = okR || okT
		rx, tx = r, t
	}
	if frames {
		c.Values[PauseRx], c.Values[PauseTx] = rx, tx
	}
	if durations {
		c.Values[PauseRxUs], c.Values[PauseTxUs] = rxUs, txUs
	}
}

func prioName(pattern string, p int) string {
	if pattern == "" {
		return ""
	}
	return fmt.Sprintf(pattern, p)
}

// sum adds the counters of names that exist; ok is false when none does.
func sum(counters map[string]uint64, names []string) (total uint64, ok bool) {
	for _, n := range names {
		if v, found := counters[n]; found {
			total += v
			ok = true
		}
	}
	return total, ok
}

// Reported reports whether the port has a counter for the category.
func (c *Categories) Reported(cat string) bool {
	if c == nil {
		return false
	}
	_, ok := c.Values[cat]
	return ok
}

// Why says why a category is unreported, for error messages and reports.
func (c *Categories) Why(cat string) string {
	switch {
	case c == nil:
		return "no counter categories from this side (its counters were not read, or it runs an older rdmarun)"
	case c.Reported(cat):
		return ""
	case !slices.Contains(CategoryNames, cat):
		return fmt.Sprintf("%q is not a counter category", cat)
	case cat == PauseRx || cat == PauseTx || cat == PauseRxUs || cat == PauseTxUs:
		return c.whyPause(cat)
	case family(c.Driver) == "":
		return fmt.Sprintf("no counter map for driver %s of this device", orUnknown(c.Driver))
	}
	return fmt.Sprintf("driver %s has no counter for it", c.Driver)
}

func (c *Categories) whyPause(cat string) string {
	switch {
	case c.Netdev == "":
		return "the port has no Ethernet netdev (InfiniBand, or no GID yet)"
	case c.EthtoolError != "":
		return "ethtool statistics of " + c.Netdev + ": " + c.EthtoolError
	}
	m, ok := pauseMaps[c.NetdevDriver]
	switch {
	case !ok:
		return fmt.Sprintf("no pause counters known for netdev %s (driver %s)", c.Netdev, orUnknown(c.NetdevDriver))
	case (cat == PauseRxUs || cat == PauseTxUs) && m.durationsUnavailable:
		return fmt.Sprintf("driver %s counts pause frames but not paused time", c.NetdevDriver)
	}
	return fmt.Sprintf("netdev %s reported none of driver %s's pause counters", c.Netdev, c.NetdevDriver)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// movedPriorities returns a copy of c keeping only the priorities whose
// pause counters moved.
func (c *Categories) movedPriorities() *Categories {
	if c == nil {
		return nil
	}
	out := *c
	out.Values = maps.Clone(c.Values)
	out.Unreported = slices.Clone(c.Unreported)
	out.Priorities = nil
	for _, p := range c.Priorities {
		if p.RxFrames != 0 || p.TxFrames != 0 || deref(p.RxUs) != 0 || deref(p.TxUs) != 0 {
			out.Priorities = append(out.Priorities, p)
		}
	}
	return &out
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
