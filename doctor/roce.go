package doctor

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// checkSoftRoCE: soft-RoCE and siw run the NIC's work on the CPU, so
// their numbers test the tool and the scenario, not a fabric.
func checkSoftRoCE(t *target) Check {
	c := t.deviceCheck("device.kind", "a hardware RDMA device")
	driver := t.dev.Driver
	if driver == "" {
		driver = "unknown driver"
	}
	if !t.soft() {
		c.Status, c.Found = OK, driver
		return c
	}
	c.Found = driver
	if t.dev.Parent != "" {
		c.Found += " on " + t.dev.Parent
	}
	c.Status = Warn
	c.Cost = "software RDMA: its latency and bandwidth are the CPU's and the kernel's, not hardware numbers"
	c.Fix = "use it to try scenarios and the tool; measure the fabric on a hardware device"
	return c
}

// congestionNA says why a congestion check does not apply to the port,
// or "" when it does.
func (t *target) congestionNA() string {
	switch {
	case t.iwarp():
		return "iWARP: TCP carries the traffic and recovers its own losses; RoCE's PFC and ECN settings do not apply"
	case !t.roce():
		return "InfiniBand: credit-based flow control, no PFC or ECN settings on the host"
	case t.soft():
		return "soft-RoCE implements neither PFC nor ECN"
	}
	return ""
}

// checkECN reads ecn/roce_np/enable/PRIO and ecn/roce_rp/enable/PRIO,
// the notification and reaction point switches the mlx5 driver of
// NVIDIA's MLNX_OFED shows under the netdev. Other drivers keep them
// out of sysfs.
func checkECN(t *target) Check {
	c := t.portCheck("roce.ecn", "ECN (DCQCN) on for the RoCE priority, both notification and reaction point")
	if na := t.congestionNA(); na != "" {
		c.Status, c.Found = NotApplicable, na
		return c
	}
	if t.portNetdev == "" {
		c.Status, c.Found = CannotTell, "no netdev found for the port"
		return c
	}
	dir := filepath.Join(t.env.Sys, "class", "net", t.portNetdev, "ecn")
	if _, err := os.Stat(dir); err != nil {
		c.Status, c.Found = CannotTell, "not in sysfs for driver "+t.dev.Driver
		c.Fix = "read it with the vendor's tools; mlx5 with MLNX_OFED shows it in /sys/class/net/NETDEV/ecn"
		return c
	}
	np, err1 := enabledPriorities(filepath.Join(dir, "roce_np", "enable"))
	rp, err2 := enabledPriorities(filepath.Join(dir, "roce_rp", "enable"))
	if err1 != nil || err2 != nil {
		c.Status, c.Found = CannotTell, fmt.Sprint("unreadable: ", firstErr(err1, err2))
		return c
	}
	c.Found = "notification point on priorities " + prioList(np) + "; reaction point on " + prioList(rp)
	if len(np) > 0 && len(rp) > 0 {
		c.Status = OK
		return c
	}
	c.Status = Warn
	c.Cost = "without ECN, congestion shows as pause frames (PFC) or drops and retransmits"
	c.Fix = fmt.Sprintf("echo 1 > /sys/class/net/%s/ecn/roce_np/enable/PRIO and roce_rp/enable/PRIO for the RoCE priority", t.portNetdev)
	return c
}

// enabledPriorities lists the priorities (file names 0..7) whose file
// reads 1.
func enabledPriorities(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	on := []int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p < 0 || p > 7 {
			continue
		}
		v, err := read(dir, e.Name())
		if err != nil {
			return nil, err
		}
		if v == "1" {
			on = append(on, p)
		}
	}
	slices.Sort(on)
	return on, nil
}

func prioList(p []int) string {
	if len(p) == 0 {
		return "none"
	}
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkPFC: PFC per priority is set and read through the DCB netlink
// interface; no driver shows it in sysfs.
func checkPFC(t *target) Check {
	c := t.portCheck("roce.pfc", "PFC on for the RoCE priority only, or a lossy fabric with ECN")
	if na := t.congestionNA(); na != "" {
		c.Status, c.Found = NotApplicable, na
		return c
	}
	c.Status, c.Found = CannotTell, "in the DCB netlink interface, not in a file"
	c.Fix = fmt.Sprintf("`dcb pfc show dev %s` (iproute2)", orNetdev(t.portNetdev))
	return c
}

// checkTrust: the trust mode (PCP or DSCP) and the DSCP-to-priority map
// are DCB settings too.
func checkTrust(t *target) Check {
	c := t.portCheck("roce.trust", "trust DSCP, with the RoCE DSCP mapped to the PFC priority")
	if na := t.congestionNA(); na != "" {
		c.Status, c.Found = NotApplicable, na
		return c
	}
	c.Status, c.Found = CannotTell, "in the DCB netlink interface, not in a file"
	c.Fix = fmt.Sprintf("`dcb app show dev %s` (iproute2) shows the DSCP map", orNetdev(t.portNetdev))
	return c
}

func orNetdev(n string) string {
	if n == "" {
		return "NETDEV"
	}
	return n
}

// pauseCounter reports whether an ethtool statistic counts pause frames:
// mlx5 names them rx_pause_ctrl_phy and rx_prioN_pause, bnxt_en
// rx_pause_frames and rx_pfc_ena_frames_priN. Durations and transitions
// are not frame counts.
func pauseCounter(name string) bool {
	if strings.Contains(name, "duration") || strings.Contains(name, "transition") || strings.Contains(name, "storm") {
		return false
	}
	return strings.Contains(name, "pause") || strings.HasPrefix(name, "rx_pfc_") || strings.HasPrefix(name, "tx_pfc_")
}

// checkPause: pause frames stop a link without any drop counter moving.
func checkPause(t *target) Check {
	c := t.portCheck("roce.pause", "no pause frames counted")
	if na := t.congestionNA(); na != "" {
		c.Status, c.Found = NotApplicable, na
		return c
	}
	if t.portNetdev == "" {
		c.Status, c.Found = CannotTell, "no netdev found for the port"
		return c
	}
	if t.env.Ethtool == nil {
		c.Status, c.Found = CannotTell, "ethtool statistics need an ioctl or netlink, which the doctor does not use"
		c.Fix = fmt.Sprintf("`ethtool -S %s | grep -E 'pause|pfc'`", t.portNetdev)
		return c
	}
	stats, err := t.env.Ethtool(t.portNetdev)
	if err != nil {
		c.Status, c.Found = CannotTell, "ethtool statistics: "+err.Error()
		return c
	}
	var moved []string
	seen := 0
	for _, name := range slices.Sorted(maps.Keys(stats)) {
		if !pauseCounter(name) {
			continue
		}
		seen++
		if stats[name] > 0 {
			moved = append(moved, fmt.Sprintf("%s=%d", name, stats[name]))
		}
	}
	switch {
	case seen == 0:
		c.Status, c.Found = CannotTell, "the driver's statistics name no pause counter"
	case len(moved) == 0:
		c.Status, c.Found = OK, fmt.Sprintf("0 in all %d pause counters", seen)
	default:
		c.Status, c.Found = Warn, strings.Join(moved, ", ")
		c.Cost = "paused time is line rate lost with every drop counter at zero (one public case lost 21.7% of a 400GbE link)"
		c.Fix = "find the congested or slow receiver; check ECN (roce.ecn) and the switch's PFC watchdog"
	}
	return c
}
