package rdma

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// CMEvent is an RDMA connection manager event (enum rdma_cm_event_type).
type CMEvent int

// The events the connection steps wait for or meet; cm_linux.go ties
// each to librdmacm's number at compile time.
const (
	CMAddrResolved    CMEvent = 0
	CMAddrError       CMEvent = 1
	CMRouteResolved   CMEvent = 2
	CMRouteError      CMEvent = 3
	CMConnectRequest  CMEvent = 4
	CMConnectResponse CMEvent = 5
	CMConnectError    CMEvent = 6
	CMUnreachable     CMEvent = 7
	CMRejected        CMEvent = 8
	CMEstablished     CMEvent = 9
	CMDisconnected    CMEvent = 10
	CMDeviceRemoval   CMEvent = 11
	CMMulticastJoin   CMEvent = 12
	CMMulticastError  CMEvent = 13
	CMTimewaitExit    CMEvent = 15
	cmEventNameCount          = 17
)

var cmEventNames = [cmEventNameCount]string{
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST",
	"CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED",
	"DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",
	"TIMEWAIT_EXIT", "MULTICAST_LEAVE",
}

// String returns the event's short name, as librdmacm's rdma_event_str
// gives it without the RDMA_CM_EVENT_ prefix.
func (e CMEvent) String() string {
	if e >= 0 && int(e) < len(cmEventNames) {
		return cmEventNames[e]
	}
	return fmt.Sprintf("EVENT_%d", int(e))
}

// CMTimes is how long one QP's connection took through the CM, step by
// step: address resolution (the local device and, on RoCE, the peer's
// neighbour entry), route resolution, and from the connect request to
// ESTABLISHED. The responder's side has only Connect: from its accept to
// ESTABLISHED.
type CMTimes struct {
	ResolveAddr  time.Duration `json:"resolve_addr_ns"`
	ResolveRoute time.Duration `json:"resolve_route_ns"`
	Connect      time.Duration `json:"connect_ns"`
}

// Total is the whole set-up time of the connection.
func (t CMTimes) Total() time.Duration { return t.ResolveAddr + t.ResolveRoute + t.Connect }

// ErrCMListenerClosed is what CMListener.Next returns once the listener
// is closed.
var ErrCMListenerClosed = errors.New("rdma: the CM listener is closed")

// CMError is a connection step that failed: an error event, a call that
// failed, or a deadline that passed.
type CMError struct {
	Step   string // "resolve_addr", "resolve_route", "connect", "accept", "listen", "join_multicast"
	Peer   string // the address being connected to, or listened on
	QP     int    // the QP's index; -1 for a listener
	Event  CMEvent
	Status int           // the event's status: a negative errno, or for REJECTED the CM's reject reason
	Errno  error         // a failed call's errno; nil for an event
	Waited time.Duration // set when the deadline passed
	Detail string        // what else is known: the devices found, the peer's reason
}

func (e *CMError) Error() string {
	at := fmt.Sprintf("rdma_cm %s to %s", e.Step, e.Peer)
	if e.QP >= 0 {
		at += fmt.Sprintf(" (QP %d)", e.QP)
	}
	var msg string
	switch {
	case e.Waited > 0:
		msg = fmt.Sprintf("%s: no answer within %v", at, e.Waited)
	case e.Errno != nil:
		msg = fmt.Sprintf("%s: %v", at, e.Errno)
	default:
		msg = fmt.Sprintf("%s: %s (status %d)", at, e.Event, e.Status)
	}
	if c := e.likelyCause(); c != "" {
		msg += "; likely cause: " + c
	}
	if e.Detail != "" {
		msg += "; " + e.Detail
	}
	return msg
}

// Unwrap gives the errno of a failed call, and ETIMEDOUT for a step
// whose deadline passed or whose event said so, so that a CM timeout
// counts as a dead path (slow or gone), like a transport timeout.
func (e *CMError) Unwrap() error {
	switch {
	case e.Errno != nil:
		return e.Errno
	case e.Waited > 0 || (e.Event != CMRejected && e.Status == -int(syscall.ETIMEDOUT)):
		return syscall.ETIMEDOUT
	}
	return nil
}

// RejectPrefix starts the private data of a reject rdmarun sends, so
// that the requester can tell the peer's own reason from padding or
// another program's bytes.
const RejectPrefix = "rdmarun: "

// rejectReason says what a REJECTED event's reason code means (the IB
// CM's codes, which rxe and mlx5 use; iWARP reports ECONNREFUSED) and
// quotes the peer's own reason from its private data.
func rejectReason(status int, private []byte) string {
	var out string
	switch status {
	case 8:
		out = "reason 8: no listener for that service (port) on the peer"
	case 28:
		out = "reason 28: refused by the peer's application"
	case -int(syscall.ECONNREFUSED):
		out = "connection refused (iWARP: nothing listens on that TCP port)"
	}
	if i := bytes.IndexByte(private, 0); i >= 0 {
		private = private[:i]
	}
	if r, ok := bytes.CutPrefix(private, []byte(RejectPrefix)); ok && len(r) > 0 {
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("the peer said: %q", r)
	}
	return out
}

// likelyCause is a hint at what usually produces the failure.
func (e *CMError) likelyCause() string {
	// The CM's own timeout (ADDR_ERROR with -ETIMEDOUT) is the step's
	// deadline passed to it, so it means what our wait would.
	timedOut := e.Waited > 0 || e.Status == -int(syscall.ETIMEDOUT)
	switch {
	case timedOut && e.Step == "resolve_addr":
		return "the peer's address did not answer neighbour resolution (ARP or ND): host down, link down, or a wrong address"
	case timedOut && e.Event != CMRejected:
		return "the peer did not answer: host down, link down, or the CM's packets dropped"
	}
	switch e.Event {
	case CMAddrError:
		return "no RDMA device owns the local address, or the peer's address cannot be reached from it"
	case CMRouteError:
		return "no route to the peer's address from the RDMA device (check `ip route get`)"
	case CMUnreachable:
		return "nothing listens on the peer's CM port, or the CM's packets are dropped (for iWARP, the TCP port is blocked)"
	case CMRejected:
		switch e.Status {
		case 8, -int(syscall.ECONNREFUSED):
			return "nothing listens on the peer's CM port (is the responder running, with its CM listener on that port?)"
		}
		return "the peer refused the connection (its QP limit, an unknown session, or its own reason)"
	case CMConnectError:
		return "the connection failed after the request was accepted"
	case CMDeviceRemoval:
		return "the RDMA device was removed"
	}
	return ""
}

// cmAddress is the IP address a GID carries, which the CM binds a
// connection to: on RoCE every GID but the link-local one is an address
// of the port's netdev. InfiniBand GIDs carry none (the CM there binds
// to the IPoIB address), and a link-local address needs an interface
// the CM is not told.
func cmAddress(device string, index int, gid GIDAddr, typ GIDType) (netip.Addr, error) {
	ip := net.IP(gid)
	if typ == GIDTypeIB || ip.To16() == nil || ip.IsLinkLocalUnicast() {
		return netip.Addr{}, fmt.Errorf("rdma: %s GID index %d (%s) holds no routable IP address for the CM to bind to; choose a RoCE GID of an IPv4 or global IPv6 address", device, index, ip)
	}
	a, _ := netip.AddrFromSlice(ip.To16())
	return a.Unmap(), nil
}

// iwarpAddress is the first IPv4 address (else global IPv6 address) of
// the netdev whose MAC an iWARP device's GID carries in its first six
// bytes, as siw and the iWARP NICs' drivers fill it.
func iwarpAddress(device string, gid GIDAddr) (netip.Addr, error) {
	if len(gid) < 6 {
		return netip.Addr{}, fmt.Errorf("rdma: %s has no GID to find its netdev by", device)
	}
	mac := net.HardwareAddr(gid[:6])
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("rdma: listing netdevs for %s: %w", device, err)
	}
	for _, ifc := range ifs {
		if !bytes.Equal(ifc.HardwareAddr, mac) {
			continue
		}
		addrs, _ := ifc.Addrs()
		var v6 netip.Addr
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, _ := netip.AddrFromSlice(n.IP)
			ip = ip.Unmap()
			switch {
			case ip.Is4():
				return ip, nil
			case ip.IsGlobalUnicast() && !v6.IsValid():
				v6 = ip
			}
		}
		if v6.IsValid() {
			return v6, nil
		}
		return netip.Addr{}, fmt.Errorf("rdma: %s (iWARP) sits on %s, which has no IPv4 or global IPv6 address for the CM to bind to", device, ifc.Name)
	}
	return netip.Addr{}, fmt.Errorf("rdma: no netdev has %s's MAC %s (from its GID); is its netdev up?", device, mac)
}

// CMAddress is the address a connection to the device's port goes to
// through the CM, with the GID SelectGID picks by itself: what a far end
// tells a doctor to resolve (rdmarun doctor --peer).
func (d *Device) CMAddress(port int) (netip.Addr, GID, error) {
	p, err := d.Port(port)
	if err != nil {
		return netip.Addr{}, GID{}, err
	}
	g, err := p.SelectGID(AutoGIDIndex)
	if err != nil {
		return netip.Addr{}, GID{}, fmt.Errorf("%s: %w", d.Name, err)
	}
	var a netip.Addr
	if d.Transport == TransportIWARP {
		a, err = iwarpAddress(d.Name, g.GID)
	} else {
		a, err = cmAddress(d.Name, g.Index, g.GID, g.Type)
	}
	return a, g, err
}

// CMRoute is what the CM resolved for a connection from Src to Dst: the
// device and port it binds the connection to, the GIDs of both ends (on
// RoCE, the addresses' GID forms) and how long each step took.
type CMRoute struct {
	Src, Dst     netip.Addr
	Device       string
	Port         int
	SGID, DGID   GIDAddr
	ResolveAddr  time.Duration
	ResolveRoute time.Duration
}

// cmAddrAttempt is how long address resolution attempt n (from 0) may
// take, with left until the step's deadline. The kernel resolves the
// peer's neighbour entry and, when it was not valid, waits for the update
// that the ARP or ND answer brings; an answer that comes before the
// request is queued is missed, and the request then waits out its whole
// timeout (measured in the testbed: a first contact took exactly the
// timeout given, 2 s, 10 s, and 19.6 s to 40 s+ of 40 s; with 500 ms
// attempts every first contact took 508 ms on rxe and siw, where the
// answer is always that fast). So attempts start at 10 ms and double up
// to 500 ms, repeated until the deadline: a missed answer costs about
// 10 ms, and a slow one is still waited for.
func cmAddrAttempt(n int, left time.Duration) time.Duration {
	const first, most = 10 * time.Millisecond, 500 * time.Millisecond
	d := most
	if n < 6 {
		d = min(first<<n, most)
	}
	return max(min(d, left), time.Millisecond)
}
