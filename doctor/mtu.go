package doctor

import (
	"fmt"
	"strconv"
)

// roceHeaders is what the kernel keeps free of a netdev's MTU for RoCE
// headers when it derives the port's MTU (iboe_get_mtu: GRH, UDP, BTH,
// the largest extended headers and the ICRC).
const roceHeaders = 96

// ibMTUs are the MTUs a port can run, smallest first.
var ibMTUs = []int{256, 512, 1024, 2048, 4096}

// roceMTU is the largest port MTU a netdev's MTU carries; 0 for none.
func roceMTU(netdevMTU int) int {
	best := 0
	for _, m := range ibMTUs {
		if m+roceHeaders <= netdevMTU {
			best = m
		}
	}
	return best
}

func checkActiveMTU(t *target) Check {
	c := t.portCheck("mtu.active", "the port's maximum MTU")
	if t.env.PortMTU == nil {
		c.Status, c.Found = CannotTell, "only the verbs interface reports it, and it was not available (no libibverbs, or a build without cgo)"
		c.Fix = "`ibv_devinfo -v` shows active_mtu and max_mtu"
		return c
	}
	active, maximum, ok := t.env.PortMTU(t.dev.Name, t.port.Num)
	if !ok {
		c.Status, c.Found = CannotTell, "the verbs interface did not report it"
		return c
	}
	c.Found = strconv.Itoa(active)
	if maximum == 0 {
		c.Status = OK
		c.Expected = "any"
		return c
	}
	c.Expected = strconv.Itoa(maximum)
	if active >= maximum {
		c.Status = OK
		return c
	}
	c.Status = Warn
	c.Cost = fmt.Sprintf("messages go in %d-byte packets: %d times the packets of %d-byte ones, more header bytes and a lower rate for large messages", active, maximum/active, maximum)
	switch {
	case t.iwarp():
		c.Fix = "raise the netdev's MTU, on the switch and the peer too"
	case t.roce():
		c.Fix = fmt.Sprintf("raise the netdev's MTU to at least %d (%d + %d B of RoCE headers), on the switch and the peer too", maximum+roceHeaders, maximum, roceHeaders)
	default:
		c.Fix = "raise the partition's MTU in the subnet manager (opensm partitions.conf mtu=5 for 4096)"
	}
	return c
}

// checkNetdevMTU: on RoCE the kernel derives the port's MTU from the
// netdev's, so the two disagree only when a driver or a later change of
// the netdev's MTU left the port sending frames the netdev does not
// carry, and switches configured like the netdev drop them.
func checkNetdevMTU(t *target) Check {
	c := t.portCheck("mtu.netdev", fmt.Sprintf("the netdev's MTU at least the port's active MTU + %d B of RoCE headers", roceHeaders))
	if t.iwarp() {
		c.Status, c.Found = NotApplicable, "iWARP: TCP cuts the traffic to the netdev's MTU itself"
		return c
	}
	if !t.roce() {
		c.Status, c.Found = NotApplicable, "InfiniBand: no Ethernet netdev carries the traffic"
		return c
	}
	if t.netdev == "" {
		c.Status, c.Found = CannotTell, "no netdev found for the port"
		return c
	}
	s, err := read(t.env.Sys, "class", "net", t.netdev, "mtu")
	mtu, perr := strconv.Atoi(s)
	if err != nil || perr != nil || mtu <= 0 {
		c.Status, c.Found = CannotTell, t.netdev+" mtu: unreadable"
		if err != nil {
			c.Found = t.netdev + " mtu: " + why(err)
		}
		return c
	}
	c.Found = fmt.Sprintf("%s MTU %d", t.netdev, mtu)
	active := 0
	if t.env.PortMTU != nil {
		active, _, _ = t.env.PortMTU(t.dev.Name, t.port.Num)
	}
	if active == 0 {
		// Without the port's MTU, say what the netdev allows.
		c.Expected = "a netdev MTU that carries 4096-byte RDMA packets"
		c.Found += fmt.Sprintf(": RDMA packets of at most %d B", roceMTU(mtu))
		if roceMTU(mtu) >= 4096 {
			c.Status = OK
			return c
		}
		c.Status = Warn
		c.Cost = "smaller RDMA packets: more of them per message and a lower rate for large messages"
		c.Fix = fmt.Sprintf("ip link set %s mtu %d (and the same on the switch and the peer)", t.netdev, 4096+roceHeaders)
		return c
	}
	c.Expected = fmt.Sprintf("at least %d (active MTU %d + %d)", active+roceHeaders, active, roceHeaders)
	if mtu >= active+roceHeaders {
		c.Status = OK
		return c
	}
	c.Status = Fail
	c.Cost = fmt.Sprintf("the port sends %d-byte payloads the netdev's %d-byte MTU does not carry: switches set like it drop them, and QPs retry until they fail", active, mtu)
	c.Fix = fmt.Sprintf("ip link set %s mtu %d on both ends and the switch ports, or set the QP MTU (mtu: in a scenario) to %d", t.netdev, active+roceHeaders, max(roceMTU(mtu), ibMTUs[0]))
	return c
}

// checkPeerMTU is the far end's MTU, which needs the far end.
func checkPeerMTU(t *target) Check {
	c := t.portCheck("mtu.peer", "the far end's active MTU equal to this port's")
	c.Status, c.Found = NotApplicable, "needs --peer HOST"
	return c
}
