package doctor

import (
	"os"
	"path/filepath"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/sysfs"
)

// target is one port being checked, with what its checks share.
type target struct {
	env      Env
	dev      device
	port     *rdma.Port
	counters sysfs.Port // counters/ and hw_counters/ only
	// pci is the device's PCI function directory, or "" for a device on
	// no PCI bus (soft-RoCE).
	pci string
	// netdev is the Ethernet interface the port's RoCE traffic leaves
	// by: that of the GID a test chooses, so a VLAN interface for a VLAN
	// GID, whose MTU bounds the packets. "" on InfiniBand, iWARP, or when
	// none is found.
	netdev string
	// portNetdev is the port's own netdev (sysfs.PortNetdev): under a
	// VLAN its parent, which holds the driver's ECN switches, the DCB
	// settings and the pause counters a VLAN interface does not have.
	portNetdev string
}

func (t *target) portCheck(name, expected string) Check {
	return Check{Name: name, Device: t.dev.Name, Port: t.port.Num, Expected: expected}
}

func (t *target) deviceCheck(name, expected string) Check {
	return Check{Name: name, Device: t.dev.Name, Expected: expected}
}

func (t *target) roce() bool { return t.port.LinkLayer == "Ethernet" && !t.iwarp() }

// iwarp reports an iWARP device (an RNIC, or siw): Ethernet too, but its
// traffic is TCP's, addressed by IP through the CM rather than by GID.
func (t *target) iwarp() bool { return t.dev.Transport == rdma.TransportIWARP }

// soft reports a software device, whose link, PCIe and congestion
// checks have nothing to look at.
func (t *target) soft() bool { return t.dev.Driver == "rdma_rxe" || t.dev.Driver == "siw" }

// Run checks the host, then each device and port env selects.
func Run(env Env) Report {
	r := Report{Devices: []string{}}
	r.Checks = append(r.Checks,
		checkMemlock(env),
		checkGovernor(env),
		checkFrequency(env),
		checkHugepages(env),
	)
	root := filepath.Join(env.Sys, "class", "infiniband")
	devs, err := readDevices(root, env.Verbs)
	if err != nil {
		r.Checks = append(r.Checks, Check{Name: "device.list", Status: CannotTell,
			Expected: "the RDMA devices in " + root, Found: err.Error()})
		return r
	}
	for _, dev := range devs {
		if env.Device != "" && dev.Name != env.Device {
			continue
		}
		r.Devices = append(r.Devices, dev.Name)
		pci := filepath.Join(root, dev.Name, "device")
		if _, err := os.Stat(filepath.Join(pci, "current_link_width")); err != nil {
			pci = ""
		}
		first := true
		for i := range dev.Ports {
			if env.Port != 0 && dev.Ports[i].Num != env.Port {
				continue
			}
			t := &target{env: env, dev: dev, port: &dev.Ports[i], pci: pci}
			t.counters, _ = sysfs.ReadPort(root, dev.Name, t.port.Num, sysfs.Counters)
			t.netdev, t.portNetdev = netdevsOf(root, t)
			if first {
				// The device's checks need a port for the PCIe
				// bandwidth against the link rate; the first one
				// checked stands for the device.
				first = false
				r.Checks = append(r.Checks,
					checkUverbs(env, dev.Name),
					checkSoftRoCE(t),
					checkTransport(t),
					checkPCIeSpeed(t),
					checkPCIeWidth(t),
					checkPCIeBandwidth(t),
					checkMaxReadReq(t),
					checkNUMA(t),
				)
			}
			r.Checks = append(r.Checks,
				checkPortState(t),
				checkPhysState(t),
				checkRate(t),
				checkLinkDowned(t),
				checkErrorCounters(t),
				checkActiveMTU(t),
				checkNetdevMTU(t),
				checkPeerMTU(t),
				checkGID(t),
				checkECN(t),
				checkPFC(t),
				checkTrust(t),
				checkPause(t),
			)
		}
	}
	return r
}

// netdevsOf finds a RoCE port's two netdevs, which differ under a VLAN:
// the one its traffic leaves by, the chosen GID's own (as the verbs
// listing or sysfs names it), and the port's own, which sysfs decides.
// Without a chosen GID's, the traffic's is the port's.
func netdevsOf(root string, t *target) (traffic, port string) {
	if !t.roce() {
		return "", ""
	}
	port = sysfs.PortNetdev(root, t.dev.Name, t.port.Num)
	if g, err := t.port.SelectGID(rdma.AutoGIDIndex); err == nil && g.Netdev != "" {
		return g.Netdev, port
	}
	return port, port
}
