package doctor

import (
	"errors"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/sysfs"
)

// device is an RDMA device as the checks see it.
type device struct {
	rdma.Device
	// gidErrs holds, by port number, why a port's GID table could not be
	// read. rdma.ReadSysfsDevices fails the whole listing on one such
	// port, since the verbs core could not choose a GID on it; the
	// doctor reports it on that port and checks everything else.
	gidErrs map[int]error
}

// readDevices reads every device under root (the infiniband class) with
// its GID tables, in the rdma package's view, which SelectGID needs. The
// tables come from verbs when it lists the device, else from sysfs.
func readDevices(root string, verbs []rdma.Device) ([]device, error) {
	parts := sysfs.Attributes | sysfs.GIDs
	if verbs != nil {
		parts = sysfs.Attributes
	}
	sds, err := sysfs.ReadDevices(root, parts)
	if err != nil {
		return nil, err
	}
	devs := make([]device, 0, len(sds))
	for _, sd := range sds {
		listed := verbsDevice(verbs, sd.Name)
		if verbs != nil && listed == nil {
			// Added since verbs listed the devices: sysfs it is.
			sd = sysfs.ReadDevice(root, sd.Name, sysfs.Attributes|sysfs.GIDs)
		}
		d := device{
			Device: rdma.Device{Name: sd.Name, Driver: sd.Driver, Parent: sd.Parent,
				NodeGUID: sd.NodeGUID, NodeType: sd.NodeType, FWVer: sd.FWVer},
			gidErrs: map[int]error{},
		}
		for _, sp := range sd.Ports {
			if err := sp.Err("gids"); err != nil {
				d.gidErrs[sp.Num] = errors.Unwrap(err)
			}
			p := rdma.Port{Num: sp.Num, State: sp.State.Name, PhysState: sp.PhysState.Name,
				LinkLayer: sp.LinkLayer, RateGbps: sp.RateGbps, RateText: sp.RateText, LID: sp.LID}
			if listed != nil {
				if vp, err := listed.Port(sp.Num); err == nil {
					p.GIDs = vp.GIDs
				}
			} else {
				for _, g := range sp.GIDs {
					p.GIDs = append(p.GIDs, rdma.GID{Index: g.Index, GID: rdma.GIDAddr(g.GID),
						Type: gidType(g.RoCEv2, sp.LinkLayer), Netdev: g.Netdev})
				}
			}
			d.Ports = append(d.Ports, p)
		}
		d.Transport = rdma.TransportOf(d.Device)
		devs = append(devs, d)
	}
	return devs, nil
}

func verbsDevice(devs []rdma.Device, name string) *rdma.Device {
	for i := range devs {
		if devs[i].Name == name {
			return &devs[i]
		}
	}
	return nil
}

// gidType names an entry as the rdma package does: sysfs calls
// InfiniBand and RoCE v1 entries alike, and the link layer tells them
// apart.
func gidType(roceV2 bool, linkLayer string) rdma.GIDType {
	switch {
	case roceV2:
		return rdma.GIDTypeRoCEv2
	case linkLayer == "InfiniBand":
		return rdma.GIDTypeIB
	}
	return rdma.GIDTypeRoCEv1
}
