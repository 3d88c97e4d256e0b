package doctor

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

// FarCM is where a connection to the far end's device goes through the
// CM, as the far end tells it (rdmarun doctor --peer): the address its
// CM listens on and the GID a route to it must resolve to. Error says
// why the far end could not tell.
type FarCM struct {
	Device    string         `json:"device"`
	Port      int            `json:"port"`
	Transport rdma.Transport `json:"transport,omitempty"`
	Addr      string         `json:"addr,omitempty"`
	GID       string         `json:"gid,omitempty"`
	GIDIndex  int            `json:"gid_index,omitempty"`
	Error     string         `json:"error,omitempty"`
}

// CMOf is the FarCM of the device and port env selects (the report's
// first device and its first port when env names none), for a far end
// answering a doctor request.
func CMOf(env Env, r Report) *FarCM {
	name := env.Device
	if name == "" && len(r.Devices) > 0 {
		name = r.Devices[0]
	}
	if name == "" {
		return nil
	}
	f := &FarCM{Device: name, Port: env.Port}
	dev, port, err := verbsPort(env, name, env.Port)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	f.Port, f.Transport = port, dev.Transport
	addr, g, err := dev.CMAddress(port)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	f.Addr, f.GID, f.GIDIndex = addr.String(), g.GID.String(), g.Index
	return f
}

// verbsPort finds device name in env's verbs listing, and its port
// (the first when port is 0).
func verbsPort(env Env, name string, port int) (*rdma.Device, int, error) {
	if env.Verbs == nil {
		return nil, 0, errors.New("no verbs listing of the devices here (libibverbs) to read GIDs from")
	}
	for i := range env.Verbs {
		d := &env.Verbs[i]
		if d.Name != name {
			continue
		}
		if port == 0 && len(d.Ports) > 0 {
			port = d.Ports[0].Num
		}
		if _, err := d.Port(port); err != nil {
			return nil, 0, err
		}
		return d, port, nil
	}
	return nil, 0, fmt.Errorf("verbs lists no device %s", name)
}

// CMResolver resolves a connection's address and route through the CM
// (rdma.ResolveCM) from src to dst.
type CMResolver func(src, dst netip.Addr, timeout time.Duration) (rdma.CMRoute, error)

// cmPeerTimeout bounds each of the two resolution steps: a neighbour
// answers in milliseconds, and the CM's own first-contact waits are
// retried in half-second attempts within it.
const cmPeerTimeout = 3 * time.Second

// PeerCM is the cm.peer check of this end's device and port (the first
// device of env's listing and its first port when env names none)
// against the far end's FarCM: resolving the far device's address from
// this device's, as an rdma_cm connection's first two steps do, must
// bind this device and, on RoCE, reach the far device's GID. It is what
// NVMe-oF, NFS over RDMA, SMB Direct, iSER and UCX's rdmacm meet before
// any data moves.
func PeerCM(env Env, far *FarCM, peer string, resolve CMResolver) Check {
	name := env.Device
	if name == "" && len(env.Verbs) > 0 {
		name = env.Verbs[0].Name
	}
	c := Check{Name: "cm.peer", Device: name, Port: env.Port,
		Expected: "rdma_cm resolves the far device's address from this device's, on this device, to the far device's GID"}
	dev, port, err := verbsPort(env, name, env.Port)
	if err != nil {
		c.Status, c.Found = CannotTell, err.Error()
		return c
	}
	c.Port = port
	switch {
	case far == nil:
		c.Status, c.Found = CannotTell, peer+" is a responder older than the check and does not tell its CM address"
		c.Fix = "upgrade rdmarun on " + peer
		return c
	case far.Error != "":
		c.Status, c.Found = CannotTell, fmt.Sprintf("%s cannot tell the CM address of %s: %s", peer, far.Device, far.Error)
		return c
	}
	dst, err := netip.ParseAddr(far.Addr)
	if err != nil {
		c.Status, c.Found = CannotTell, fmt.Sprintf("%s gave the CM address %q, which does not parse: %v", peer, far.Addr, err)
		return c
	}
	src, _, err := dev.CMAddress(port)
	if err != nil {
		c.Status, c.Found = Fail, err.Error()
		c.Cost = "no rdma_cm connection can be bound to this device"
		c.Fix = fmt.Sprintf("give %s's netdev an IP address (on InfiniBand, its IPoIB interface)", name)
		return c
	}
	route, err := resolve(src, dst, cmPeerTimeout)
	farName := fmt.Sprintf("%s's %s/%d (%s)", peer, far.Device, far.Port, dst)
	if err != nil {
		c.Status = Fail
		c.Found = err.Error()
		c.Cost = fmt.Sprintf("connections through rdma_cm from %s to %s fail before any data moves", name, farName)
		c.Fix = fmt.Sprintf("`ip route get %s from %s` and `ip neigh show %s` here: the address must route out of %s's netdev and its neighbour answer; on InfiniBand the subnet manager must answer path queries", dst, src, dst, name)
		return c
	}
	// iWARP's CM reaches the far end by IP alone and leaves the GIDs
	// zero; printing "sgid ::" would read as a fault.
	gids := fmt.Sprintf("sgid %s, dgid %s", route.SGID, route.DGID)
	if dev.Transport == rdma.TransportIWARP {
		gids = "iWARP, by IP address"
	}
	c.Found = fmt.Sprintf("%s from %s: bound to %s port %d, %s; address %s, route %s",
		farName, src, route.Device, route.Port, gids, ms(route.ResolveAddr), ms(route.ResolveRoute))
	switch {
	case route.Device != name || route.Port != port:
		c.Status = Fail
		c.Cost = fmt.Sprintf("connections from %s leave through %s port %d, not %s port %d", src, route.Device, route.Port, name, port)
		c.Fix = fmt.Sprintf("%s is an address of %s's netdev too; give each RDMA device's netdev its own address", src, route.Device)
	case dev.Transport == rdma.TransportRoCE && far.Transport == rdma.TransportRoCE && route.DGID.String() != far.GID:
		c.Status = Fail
		c.Cost = fmt.Sprintf("the route reaches GID %s, not the far device's GID %s (index %d): the QPs would address another device or GID type", route.DGID, far.GID, far.GIDIndex)
		c.Fix = fmt.Sprintf("on %s, check which device owns %s (rdmarun devices) and that its GID table has the RoCE v2 entry for it", peer, dst)
	default:
		c.Status = OK
	}
	return c
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
