package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// A run counts only if its client's packets crossed the link: through
// the CM, perftest 4.5-0.17's client resolves with no source address, so
// with both ends in one network namespace its QPs bind to the server's
// device (measured in the testbed: ib_write_lat -R -d rxe1, with or
// without --source_ip, sent nothing on veth1, its QPs ran inside rxe0),
// a device loopback, not the path under test. --cm-source corrects
// that; each run is still checked by the client netdev's transmit
// counter, so a tool that stays inside one device never gets a ratio.

// netdevOf is the netdev the client device dev sends on: rxe names its
// parent in sysfs; siw does not, and the testbed puts siw<i> on
// iwveth<i>. "" when neither tells.
func netdevOf(dev string) string {
	if b, err := os.ReadFile("/sys/class/infiniband/" + dev + "/parent"); err == nil {
		return strings.TrimSpace(string(b))
	}
	if n, ok := strings.CutPrefix(dev, "siw"); ok {
		return "iwveth" + n
	}
	return ""
}

// txPackets is netdev's transmit packet counter, -1 when it cannot be
// read (then no run is judged).
func txPackets(netdev string) int64 {
	if netdev == "" {
		return -1
	}
	b, err := os.ReadFile("/sys/class/net/" + netdev + "/statistics/tx_packets")
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// linkCheck is one run's count: the client netdev's packets sent during
// it against the iterations, each of which sends at least one.
type linkCheck struct {
	netdev    string
	sent, min int64
}

// off is true when the count is known and short.
func (c linkCheck) off() bool { return c.sent >= 0 && c.sent < c.min }

// measureLink runs f and counts what netdev sent meanwhile.
func measureLink(netdev string, iters int, f func() (sample, error)) (sample, error) {
	before := txPackets(netdev)
	s, err := f()
	after := txPackets(netdev)
	s.link = linkCheck{netdev: netdev, sent: -1, min: int64(iters)}
	if before >= 0 && after >= 0 {
		s.link.sent = after - before
	}
	return s, err
}

// offLink is the first run of runs whose packets did not cross the link.
func offLink(runs []sample) (linkCheck, bool) {
	for _, r := range runs {
		if r.link.off() {
			return r.link, true
		}
	}
	return linkCheck{}, false
}

// offLinkNote says which tool's run stayed off the link, for the line
// under its test's rows.
func offLinkNote(tool string, c linkCheck) string {
	return fmt.Sprintf("  ^ %s: a run sent %d packets on %s in %d iterations, so its QPs did not cross the link (a loopback inside one device); no ratio\n", tool, c.sent, c.netdev, c.min)
}

// netdevAddress is netdev's first IPv4 address, else its first other
// one (link-local aside): the source a CM client on that netdev's device
// resolves from.
func netdevAddress(netdev string) (netip.Addr, error) {
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("client netdev %q: %w", netdev, err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", netdev, err)
	}
	var other netip.Addr
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || p.Addr().IsLinkLocalUnicast() {
			continue
		}
		if p.Addr().Is4() {
			return p.Addr(), nil
		}
		if !other.IsValid() {
			other = p.Addr()
		}
	}
	if !other.IsValid() {
		return netip.Addr{}, fmt.Errorf("%s has no address to resolve from", netdev)
	}
	return other, nil
}
