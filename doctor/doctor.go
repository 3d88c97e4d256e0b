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
	// netdev is the Ethernet interface RoCE traffic leaves by; "" on
	// InfiniBand or when none is found.
	netdev string
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
			t.netdev = netdevOf(env, root, t)
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

// netdevOf finds the netdev of a RoCE port: the one its chosen GID sits
// on, else the software device's parent, else the PCI function's only
// netdev.
func netdevOf(env Env, root string, t *target) string {
	if !t.roce() {
		return ""
	}
	if g, err := t.port.SelectGID(rdma.AutoGIDIndex); err == nil && g.Netdev != "" {
		return g.Netdev
	}
	if t.dev.Parent != "" {
		return t.dev.Parent
	}
	entries, err := os.ReadDir(filepath.Join(root, t.dev.Name, "device", "net"))
	if err == nil && len(entries) == 1 {
		return entries[0].Name()
	}
	return ""
}
