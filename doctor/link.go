package doctor

import (
	"fmt"
	"slices"
	"strings"
)

func checkPortState(t *target) Check {
	c := t.portCheck("port.state", "ACTIVE")
	c.Found = t.port.State
	if c.Found == "ACTIVE" {
		c.Status = OK
		return c
	}
	c.Status = Fail
	c.Cost = "no traffic: queue pairs cannot connect"
	if t.port.LinkLayer == "InfiniBand" && t.port.State == "INIT" {
		c.Fix = "the link is up but no subnet manager configured the port: start opensm or check the fabric's SM"
	} else {
		c.Fix = "bring the link up (ip link set NETDEV up, check the cable and the switch port)"
	}
	return c
}

func checkPhysState(t *target) Check {
	c := t.portCheck("port.phys_state", "LinkUp")
	c.Found = t.port.PhysState
	if c.Found == "LinkUp" {
		c.Status = OK
		return c
	}
	c.Status = Fail
	c.Cost = "no link: nothing crosses the wire"
	c.Fix = "check the cable, the transceiver and the switch port (Polling: no partner; Disabled: administratively down)"
	return c
}

// checkRate: sysfs shows the rate the link trained to, not what the port
// and cable could do; the maximum needs the driver's link modes (ethtool
// over netlink) or the PMA (ibstat, mlxlink). A link that trained to one
// lane is nearly always degraded, so that alone is judged.
func checkRate(t *target) Check {
	c := t.portCheck("port.rate", "the port's maximum speed and width")
	c.Found = t.port.RateText
	if c.Found == "" {
		c.Found = "no rate file"
	}
	if t.soft() {
		c.Status = NotApplicable
		c.Found += ": a software device's rate only mirrors its netdev's speed"
		return c
	}
	c.Fix = "compare with the port's supported modes: `ethtool NETDEV` (Supported link modes) on Ethernet, `ibstat` or `mlxlink -d DEV` on InfiniBand"
	if t.port.LinkLayer == "InfiniBand" && strings.Contains(t.port.RateText, "(1X ") {
		c.Status = Warn
		c.Cost = fmt.Sprintf("one lane: a quarter of a 4X link's rate, %s", t.port.RateText)
		c.Fix = "reseat or replace the cable; `mlxlink` shows which lanes are down"
		return c
	}
	c.Status = CannotTell
	c.Expected += " (not in sysfs)"
	return c
}

// errorCounters are the PMA counters that count a sick link, not traffic;
// any non-zero value since the counters were last reset is worth a look.
var errorCounters = []string{"symbol_error", "link_error_recovery", "local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_rcv_errors"}

func checkLinkDowned(t *target) Check {
	c := t.portCheck("port.link_downed", "0 since the counters were reset")
	if err := firstErr(t.counters.Err("counters"), t.counters.Err("counters/link_downed"), t.counters.Err("hw_counters/link_downed")); err != nil {
		c.Status, c.Found = CannotTell, err.Error()
		return c
	}
	v, ok := t.counters.Counters["link_downed"]
	if !ok {
		v, ok = t.counters.HWCounters["link_downed"]
	}
	if !ok {
		c.Status, c.Found = NotApplicable, "the driver has no link_downed counter"
		return c
	}
	c.Found = fmt.Sprint(v)
	if v == 0 {
		c.Status = OK
		return c
	}
	c.Status = Warn
	c.Cost = "each flap stops traffic for the retrain time and breaks connections past their retries"
	c.Fix = "watch whether it grows (rdmarun_exporter); check the cable, transceiver and switch port logs"
	return c
}

func checkErrorCounters(t *target) Check {
	c := t.portCheck("port.error_counters", "0 in "+strings.Join(errorCounters, ", "))
	if err := t.counters.Err("counters"); err != nil {
		c.Status, c.Found = CannotTell, err.Error()
		return c
	}
	if len(t.counters.Counters) == 0 {
		c.Status, c.Found = NotApplicable, "the port has no counters/ (soft-RoCE, or a driver without the PMA)"
		return c
	}
	var moved []string
	for _, name := range errorCounters {
		if v := t.counters.Counters[name]; v > 0 {
			moved = append(moved, fmt.Sprintf("%s=%d", name, v))
		}
	}
	if len(moved) == 0 {
		c.Status, c.Found = OK, "all 0"
		return c
	}
	slices.Sort(moved)
	c.Status, c.Found = Warn, strings.Join(moved, ", ")
	c.Cost = "corrupted or dropped packets: retransmits, and latency tails of a retransmit timeout"
	c.Fix = "watch whether they grow; check the cable and transceiver (`mlxlink` shows BER)"
	return c
}
