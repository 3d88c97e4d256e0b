package doctor

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// PortMTU is one port's MTU at each layer: what mtu.peer compares
// between two ends, which no single host can check. A zero MTU is one
// that could not be read.
type PortMTU struct {
	Device    string `json:"device"`
	Port      int    `json:"port"`
	Netdev    string `json:"netdev,omitempty"`
	NetdevMTU int    `json:"netdev_mtu,omitempty"`
	ActiveMTU int    `json:"active_mtu,omitempty"`
}

// MTUs reads the MTUs of every port env selects, as Run finds them.
func MTUs(env Env) []PortMTU {
	root := filepath.Join(env.Sys, "class", "infiniband")
	devs, err := readDevices(root, env.Verbs)
	if err != nil {
		return nil
	}
	var out []PortMTU
	for _, dev := range devs {
		if env.Device != "" && dev.Name != env.Device {
			continue
		}
		for i := range dev.Ports {
			if env.Port != 0 && dev.Ports[i].Num != env.Port {
				continue
			}
			t := &target{env: env, dev: dev, port: &dev.Ports[i]}
			m := PortMTU{Device: dev.Name, Port: t.port.Num}
			m.Netdev, _ = netdevsOf(root, t)
			if m.Netdev != "" {
				if s, err := read(env.Sys, "class", "net", m.Netdev, "mtu"); err == nil {
					m.NetdevMTU, _ = strconv.Atoi(s)
				}
			}
			if env.PortMTU != nil {
				m.ActiveMTU, _, _ = env.PortMTU(dev.Name, t.port.Num)
			}
			out = append(out, m)
		}
	}
	return out
}

// PeerMTU is the mtu.peer check of the local port against the far end's
// port far, on the host named peer. Both layers must agree: RoCE traffic
// between two ports runs at the smaller active MTU, and with netdev MTUs
// that differ the larger end sends frames the smaller end (and switches
// set like it) drop.
func PeerMTU(local, far PortMTU, peer string) Check {
	c := Check{Name: "mtu.peer", Device: local.Device, Port: local.Port,
		Expected: "the far end's active MTU and netdev MTU equal to this port's"}
	c.Found = fmt.Sprintf("this end %s, %s's %s/%d %s", local.describe(), peer, far.Device, far.Port, far.describe())
	netdevs := local.NetdevMTU > 0 && far.NetdevMTU > 0
	actives := local.ActiveMTU > 0 && far.ActiveMTU > 0
	switch {
	case netdevs && local.NetdevMTU != far.NetdevMTU:
		c.Status = Fail
		c.Cost = fmt.Sprintf("frames larger than %d B leave the end with MTU %d and are dropped at the other (and by switches set like it); RDMA runs at the smaller active MTU at best",
			min(local.NetdevMTU, far.NetdevMTU), max(local.NetdevMTU, far.NetdevMTU))
		c.Fix = fmt.Sprintf("set the same netdev MTU on both ends and the switch ports between them (ip link set DEV mtu %d on the smaller end, or lower the larger)", max(local.NetdevMTU, far.NetdevMTU))
	case actives && local.ActiveMTU != far.ActiveMTU:
		c.Status = Fail
		c.Cost = fmt.Sprintf("RDMA between the two ends runs at %d-byte packets, not %d: more packets per message and a lower rate for large messages",
			min(local.ActiveMTU, far.ActiveMTU), max(local.ActiveMTU, far.ActiveMTU))
		c.Fix = "give both ports the same MTU: on RoCE through the netdevs' MTUs, on InfiniBand through the partition's MTU in the subnet manager"
	case !netdevs && !actives:
		c.Status = CannotTell
		c.Found += ": neither layer's MTU is known on both ends"
		c.Fix = "`ibv_devinfo -v` (active_mtu) and `ip link` on both ends"
	default:
		c.Status = OK
	}
	return c
}

func (m PortMTU) describe() string {
	s := "active MTU "
	if m.ActiveMTU > 0 {
		s += strconv.Itoa(m.ActiveMTU)
	} else {
		s += "unknown"
	}
	if m.Netdev != "" {
		s += ", " + m.Netdev + " MTU "
		if m.NetdevMTU > 0 {
			s += strconv.Itoa(m.NetdevMTU)
		} else {
			s += "unknown"
		}
	}
	return s
}

// SetPeerMTU replaces the report's mtu.peer check of each local port
// with its comparison against far, the far end's port.
func (r *Report) SetPeerMTU(local []PortMTU, far PortMTU, peer string) {
	for i, c := range r.Checks {
		if c.Name != "mtu.peer" {
			continue
		}
		for _, m := range local {
			if m.Device == c.Device && m.Port == c.Port {
				r.Checks[i] = PeerMTU(m, far, peer)
			}
		}
	}
}

// UnmarshalText implements encoding.TextUnmarshaler: a report travels
// as JSON between two ends (rdmarun doctor --peer). A status this build
// does not know reads as cannot_tell rather than failing the report.
func (s *Status) UnmarshalText(b []byte) error {
	for i, n := range statusNames {
		if n == string(b) {
			*s = Status(i)
			return nil
		}
	}
	*s = CannotTell
	return nil
}
