//go:build linux && cgo && !nordma

package rdma

/*
#cgo pkg-config: librdmacm
#include <stdlib.h>
#include "cm.h"
*/
import "C"

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The CM event numbers are librdmacm's; this does not compile if they
// drift (see enums_linux.go).
func _() {
	var x [1]struct{}
	_ = x[CMAddrResolved-C.RDMA_CM_EVENT_ADDR_RESOLVED]
	_ = x[CMAddrError-C.RDMA_CM_EVENT_ADDR_ERROR]
	_ = x[CMRouteResolved-C.RDMA_CM_EVENT_ROUTE_RESOLVED]
	_ = x[CMRouteError-C.RDMA_CM_EVENT_ROUTE_ERROR]
	_ = x[CMConnectRequest-C.RDMA_CM_EVENT_CONNECT_REQUEST]
	_ = x[CMConnectResponse-C.RDMA_CM_EVENT_CONNECT_RESPONSE]
	_ = x[CMConnectError-C.RDMA_CM_EVENT_CONNECT_ERROR]
	_ = x[CMUnreachable-C.RDMA_CM_EVENT_UNREACHABLE]
	_ = x[CMRejected-C.RDMA_CM_EVENT_REJECTED]
	_ = x[CMEstablished-C.RDMA_CM_EVENT_ESTABLISHED]
	_ = x[CMDisconnected-C.RDMA_CM_EVENT_DISCONNECTED]
	_ = x[CMDeviceRemoval-C.RDMA_CM_EVENT_DEVICE_REMOVAL]
	_ = x[CMMulticastJoin-C.RDMA_CM_EVENT_MULTICAST_JOIN]
	_ = x[CMMulticastError-C.RDMA_CM_EVENT_MULTICAST_ERROR]
	_ = x[CMTimewaitExit-C.RDMA_CM_EVENT_TIMEWAIT_EXIT]
}

// cmPoll bounds one wait in C, so that a listener being closed is seen
// within it and no cgo call outlives its caller's deadline by more.
const cmPoll = 200 * time.Millisecond

// newCMChannel makes an event channel whose fd does not block: rr_cm_next
// polls it with a deadline.
func newCMChannel() (*C.struct_rdma_event_channel, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, fmt.Errorf("rdma: rdma_create_event_channel: %w (is the rdma_ucm module loaded? /dev/infiniband/rdma_cm must exist)", errnoOf(err))
	}
	if err := unix.SetNonblock(int(ch.fd), true); err != nil {
		C.rdma_destroy_event_channel(ch)
		return nil, fmt.Errorf("rdma: the CM event channel: %w", err)
	}
	return ch, nil
}

func errnoOf(err error) syscall.Errno {
	if e, ok := err.(syscall.Errno); ok && e != 0 {
		return e
	}
	return syscall.EIO
}

// cmNext waits until deadline for ch's next event. ok is false when the
// deadline passed first.
func cmNext(ch *C.struct_rdma_event_channel, deadline time.Time, stop func() bool) (ev C.struct_rr_cm_event, ok bool, err error) {
	for {
		left := time.Until(deadline)
		if left <= 0 || stop != nil && stop() {
			return ev, false, nil
		}
		rc := C.rr_cm_next(ch, C.int(min(left, cmPoll).Milliseconds()+1), &ev)
		switch {
		case rc == 0:
			return ev, true, nil
		case rc < 0:
			return ev, false, syscall.Errno(-rc)
		}
	}
}

// cmIP is addr in the 16-byte form the C helpers take.
func cmIP(addr netip.Addr) *C.uint8_t {
	b := addr.As16()
	p := (*C.uint8_t)(C.malloc(16))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), 16), b[:])
	return p
}

// CMAddress is the address the endpoint's QPs connect from, or listen
// on, through the CM, so that the CM binds them to this device, not to
// whichever device routing picks (measured: without it, a connection from
// rxe1 to 10.0.0.1 resolved to rxe0). On RoCE it is the GID's address
// (cmAddress); an iWARP device's GID holds its netdev's MAC, so it is
// that netdev's address.
func (e *Endpoint) CMAddress() (netip.Addr, error) {
	if e.transport == TransportIWARP {
		return iwarpAddress(e.cfg.Device, e.gid.GID)
	}
	return cmAddress(e.cfg.Device, e.gid.Index, e.gid.GID, e.gid.Type)
}

// cmConn is what the CM's attributes are overridden with: the test's
// timers, retries and depths, and its path MTU when it names one.
func (e *Endpoint) cmConn(a QPAttrs) (C.struct_rr_conn, error) {
	c := C.struct_rr_conn{
		timeout: C.uint8_t(a.Timeout), retry_cnt: C.uint8_t(a.RetryCnt), rnr_retry: C.uint8_t(a.RNRRetry),
		min_rnr_timer: C.uint8_t(a.MinRNRTimer), max_rd_atomic: C.uint8_t(a.MaxRdAtomic), max_dest_rd_atomic: C.uint8_t(a.MaxRdAtomic),
	}
	if e.cfg.QPType == UC {
		c.uc = 1
	}
	if a.MTU != 0 {
		mtu, err := MTUEnum(a.MTU)
		if err != nil {
			return c, err
		}
		c.mtu = C.uint8_t(mtu)
	}
	return c, nil
}

// checkCMDevice fails when the CM bound id to another device or port
// than the endpoint's: the QPs would be connected through the wrong NIC.
func (e *Endpoint) checkCMDevice(id *C.struct_rdma_cm_id, cmErr func(d string) error) error {
	var port C.uint8_t
	dev := C.GoString(C.rr_cm_device(id, &port))
	if dev != e.cfg.Device || int(port) != e.cfg.Port {
		return cmErr(fmt.Sprintf("the CM bound the connection to %s port %d, not the test's %s port %d (the address belongs to another device)", dev, port, e.cfg.Device, e.cfg.Port))
	}
	return nil
}

// cmDial is one QP's connection in progress: the step it waits in, when
// that step began and when its wait ends.
type cmDial struct {
	qp    int
	id    *C.struct_rdma_cm_id
	step  string // "resolve_addr", "resolve_route", "connect"
	begin time.Time
	// until is when the current wait ends: an address attempt's end
	// (cmAddrAttempt) or the step's deadline; addrEnd is when address
	// resolution as a whole gives up, after addrTries attempts so far.
	until, addrEnd time.Time
	addrTries      int
}

// ConnectCM connects every QP of the endpoint through the CM to the
// listener at peer, the way applications connect (rdma_resolve_addr,
// rdma_resolve_route, rdma_connect), from the address of the endpoint's
// GID. At most parallel QPs are in progress at once (1: one after
// another); their events share the endpoint's channel and are told apart
// by id. private(i) is sent with QP i's request (at most 56 bytes: the
// listener sees it padded with zeros to that). Each step waits at most
// timeout. The CM's attributes are used but for the test's timers,
// retries, depths and path MTU (attrs).
func (e *Endpoint) ConnectCM(peer netip.AddrPort, private func(qp int) []byte, attrs QPAttrs, timeout time.Duration, parallel int) error {
	if e.ready || e.cmIDs != nil {
		return fmt.Errorf("rdma: the QPs of %s are already connected", e.cfg.Device)
	}
	if err := attrs.Validate(); err != nil {
		return err
	}
	if parallel < 1 {
		return fmt.Errorf("rdma: %d QPs connecting at once; want at least 1", parallel)
	}
	src, err := e.CMAddress()
	if err != nil {
		return err
	}
	c, err := e.cmConn(attrs)
	if err != nil {
		return err
	}
	for i := range e.qps {
		if n := len(private(i)); n > 56 {
			return fmt.Errorf("rdma: %d bytes of private data for QP %d; a CM connect request carries at most 56", n, i)
		}
	}
	if err := e.cmPrepare(); err != nil {
		return err
	}
	csrc, cdst := cmIP(src), cmIP(peer.Addr())
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cdst))
	from := "from " + src.String()
	fail := func(d *cmDial, ev CMEvent, status int, errno error, waited time.Duration, detail string) error {
		return &CMError{Step: d.step, Peer: peer.String(), QP: d.qp, Event: ev, Status: status, Errno: errno, Waited: waited, Detail: detail}
	}
	// resolveAddr starts (or, after an attempt timed out, restarts) d's
	// address resolution on a new id.
	resolveAddr := func(d *cmDial) error {
		if d.id != nil {
			C.rdma_destroy_id(d.id)
			d.id, e.cmIDs[d.qp] = nil, nil
		}
		var id *C.struct_rdma_cm_id
		if rc, err := C.rdma_create_id(e.cmCh, &id, nil, C.RDMA_PS_TCP); rc != 0 {
			return fail(d, 0, 0, errnoOf(err), 0, "rdma_create_id")
		}
		d.id, e.cmIDs[d.qp] = id, id
		attempt := cmAddrAttempt(d.addrTries, time.Until(d.addrEnd))
		d.addrTries++
		if rc := C.rr_cm_resolve_addr(id, csrc, 1, cdst, C.uint16_t(peer.Port()), C.int(attempt.Milliseconds())); rc != 0 {
			return fail(d, 0, 0, syscall.Errno(rc), 0, from)
		}
		d.until = time.Now().Add(attempt + time.Second)
		return nil
	}
	live := map[*C.struct_rdma_cm_id]*cmDial{}
	start := time.Now()
	next, done := 0, 0
	for done < len(e.qps) {
		for ; len(live) < parallel && next < len(e.qps); next++ {
			now := time.Now()
			d := &cmDial{qp: next, step: "resolve_addr", begin: now, addrEnd: now.Add(timeout)}
			if err := resolveAddr(d); err != nil {
				return err
			}
			live[d.id] = d
		}
		first := slices.MinFunc(slices.Collect(maps.Values(live)), func(a, b *cmDial) int { return a.until.Compare(b.until) })
		ev, ok, err := cmNext(e.cmCh, first.until, nil)
		if err != nil {
			return fail(first, 0, 0, err, 0, "")
		}
		if !ok {
			detail := ""
			if first.step == "resolve_addr" {
				detail = from
			}
			return fail(first, 0, 0, nil, time.Since(first.begin).Round(time.Millisecond), detail)
		}
		d := live[ev.id]
		if d == nil {
			continue // an id given up on and destroyed; nothing waits for it
		}
		t := &e.cmTimes[d.qp]
		got := CMEvent(ev.event)
		switch {
		case d.step == "resolve_addr" && got == CMAddrResolved:
			t.ResolveAddr = time.Since(d.begin)
			if err := e.checkCMDevice(d.id, func(s string) error { return fail(d, CMAddrResolved, 0, nil, 0, s) }); err != nil {
				return err
			}
			d.step, d.begin, d.until = "resolve_route", time.Now(), time.Now().Add(timeout+time.Second)
			if rc, err := C.rdma_resolve_route(d.id, C.int(timeout.Milliseconds())); rc != 0 {
				return fail(d, 0, 0, errnoOf(err), 0, "")
			}
		case d.step == "resolve_addr" && got == CMAddrError && ev.status == -C.ETIMEDOUT && time.Now().Before(d.addrEnd):
			delete(live, d.id)
			if err := resolveAddr(d); err != nil {
				return err
			}
			live[d.id] = d
		case d.step == "resolve_route" && got == CMRouteResolved:
			t.ResolveRoute = time.Since(d.begin)
			d.step, d.begin, d.until = "connect", time.Now(), time.Now().Add(timeout)
			var cpriv unsafe.Pointer
			priv := private(d.qp)
			if len(priv) > 0 {
				cpriv = C.CBytes(priv)
			}
			rc := C.rr_cm_connect(d.id, e.qps[d.qp].qp_num, &c, cpriv, C.uint8_t(len(priv)), 0)
			C.free(cpriv)
			if rc != 0 {
				return fail(d, 0, 0, syscall.Errno(rc), 0, "")
			}
		case d.step == "connect" && got == CMEstablished && e.transport == TransportIWARP:
			// iWARP's CM moves the QP to RTS itself, and has no
			// response to answer: the connection is up.
			t.Connect = time.Since(d.begin)
			delete(live, d.id)
			done++
		case d.step == "connect" && got == CMConnectResponse && e.transport != TransportIWARP:
			var stage C.int
			if rc := C.rr_cm_qp_ready(d.id, e.qps[d.qp], &c, &stage); rc != 0 {
				return cmReadyErr(e.cfg.Device, stage, rc)
			}
			if rc, err := C.rdma_establish(d.id); rc != 0 {
				return fail(d, 0, 0, errnoOf(err), 0, "rdma_establish")
			}
			t.Connect = time.Since(d.begin)
			delete(live, d.id)
			done++
		default:
			err := fail(d, got, int(ev.status), nil, 0, "")
			if d.step == "resolve_addr" {
				err.(*CMError).Detail = from
			}
			if got == CMRejected {
				err.(*CMError).Detail = rejectReason(int(ev.status), C.GoBytes(unsafe.Pointer(&ev.private_data[0]), C.int(ev.private_len)))
			}
			return err
		}
	}
	e.cmElapsed = time.Since(start)
	return e.cmConnected(attrs)
}

func cmReadyErr(dev string, stage, rc C.int) error {
	op := [...]string{"rdma_init_qp_attr", "ibv_modify_qp(RTR)", "ibv_modify_qp(RTS)"}[stage]
	return &VerbsError{Op: op, Device: dev, Errno: syscall.Errno(rc)}
}

// cmConnected records the attributes the driver holds once every QP is
// connected, as Connect does.
func (e *Endpoint) cmConnected(attrs QPAttrs) error {
	a := attrs
	if e.cfg.QPType == RC {
		var err error
		if a, err = e.queryAttrs(attrs); err != nil {
			return err
		}
	}
	e.attrs = a
	e.ready = true
	return nil
}

// cmPrepare makes the endpoint's CM event channel and its per-QP ids
// and times, where they are not made yet.
func (e *Endpoint) cmPrepare() error {
	if e.cmCh == nil {
		ch, err := newCMChannel()
		if err != nil {
			return err
		}
		e.cmCh = ch
	}
	if e.cmIDs == nil {
		e.cmIDs = make([]*C.struct_rdma_cm_id, len(e.qps))
		e.cmTimes = make([]CMTimes, len(e.qps))
		e.cmAccepted = make([]time.Time, len(e.qps))
	}
	return nil
}

// CMTimes returns each QP's connection set-up times after ConnectCM or
// the last AcceptCM; nil for QPs connected by exchange (Connect).
func (e *Endpoint) CMTimes() []CMTimes { return e.cmTimes }

// CMElapsed is how long ConnectCM took from its first QP's start to its
// last QP's connection; 0 on the accepting side.
func (e *Endpoint) CMElapsed() time.Duration { return e.cmElapsed }

// closeCM disconnects and frees the endpoint's CM ids and their channel;
// Close calls it before it destroys the QPs the ids were connected for.
func (e *Endpoint) closeCM() {
	for _, id := range e.cmIDs {
		if id != nil {
			C.rdma_disconnect(id)
			C.rdma_destroy_id(id)
		}
	}
	e.cmIDs = nil
	if e.cmCh != nil {
		C.rdma_destroy_event_channel(e.cmCh)
		e.cmCh = nil
	}
}

// CMListener accepts connections through the CM on one address and port,
// for the endpoints that AcceptCM hands each request to.
type CMListener struct {
	mu sync.Mutex // guards closed
	// busy is held while Next waits in C on the channel, so that Close
	// frees it only after that wait's slice has ended.
	busy   sync.Mutex
	ch     *C.struct_rdma_event_channel
	ids    []*C.struct_rdma_cm_id // one, or two for [::] (ListenCM)
	addr   netip.AddrPort
	closed bool
}

// ListenCM listens for CM connect requests on addr (port 0: one the CM
// picks; Addr tells which), holding at most backlog unanswered ones.
//
// The IPv6 wildcard [::] is two listeners on one port and one channel:
// 0.0.0.0 and [::] for IPv6 only. One dual-stack [::] listener hands an
// iWARP device's IPv4 connections to the CM with v4-mapped addresses,
// which it cannot match to a device, and siw resets them: measured in
// the testbed, a serve on siw3 answered every IPv4 connect with
// REJECTED (ECONNRESET) while perftest -R, listening on IPv4, passed.
func ListenCM(addr netip.AddrPort, backlog int) (*CMListener, error) {
	ch, err := newCMChannel()
	if err != nil {
		return nil, err
	}
	l := &CMListener{ch: ch, addr: addr}
	binds := []netip.Addr{addr.Addr()}
	if addr.Addr() == netip.IPv6Unspecified() {
		binds = []netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()}
	}
	port := addr.Port()
	for _, ip := range binds {
		var id *C.struct_rdma_cm_id
		if rc, err := C.rdma_create_id(ch, &id, nil, C.RDMA_PS_TCP); rc != 0 {
			l.Close()
			return nil, &CMError{Step: "listen", Peer: addr.String(), QP: -1, Errno: errnoOf(err)}
		}
		l.ids = append(l.ids, id)
		v6only := 0
		if len(binds) > 1 && ip.Is6() {
			v6only = 1
		}
		cip := cmIP(ip)
		rc := C.rr_cm_listen(id, cip, C.uint16_t(port), C.int(backlog), C.int(v6only))
		C.free(unsafe.Pointer(cip))
		if rc != 0 {
			l.Close()
			detail := ""
			if syscall.Errno(rc) == syscall.EADDRNOTAVAIL || syscall.Errno(rc) == syscall.ENODEV {
				detail = "no RDMA device owns that address"
			}
			return nil, &CMError{Step: "listen", Peer: netip.AddrPortFrom(addr.Addr(), port).String(), QP: -1, Errno: syscall.Errno(rc), Detail: detail}
		}
		if port == 0 {
			be := uint16(C.rdma_get_src_port(id)) // network byte order
			port = be>>8 | be<<8
		}
	}
	l.addr = netip.AddrPortFrom(addr.Addr(), port)
	return l, nil
}

// Addr is the address and port the listener is bound to.
func (l *CMListener) Addr() netip.AddrPort { return l.addr }

// CMRequest is one connect request a listener received: an id waiting
// to be accepted by an endpoint (AcceptCM) or rejected.
type CMRequest struct {
	id      *C.struct_rdma_cm_id
	Private []byte // as the CM delivered it: padded with zeros
	Device  string // the device and port the request arrived on
	Port    int
}

// Next waits until deadline for the next connect request. It returns
// nil, nil when the deadline passed, and ErrCMListenerClosed once the
// listener is closed (a loop serving it ends on that). Events of
// other kinds are not expected on a listener's channel (accepted ids
// move to their endpoint's) and are skipped.
func (l *CMListener) Next(deadline time.Time) (*CMRequest, error) {
	l.busy.Lock()
	defer l.busy.Unlock()
	if l.isClosed() {
		return nil, ErrCMListenerClosed
	}
	for {
		ev, ok, err := cmNext(l.ch, deadline, l.isClosed)
		switch {
		case err != nil:
			return nil, err
		case l.isClosed():
			return nil, ErrCMListenerClosed
		case !ok:
			return nil, nil
		}
		if CMEvent(ev.event) != CMConnectRequest {
			continue
		}
		var port C.uint8_t
		dev := C.GoString(C.rr_cm_device(ev.id, &port))
		return &CMRequest{id: ev.id, Private: C.GoBytes(unsafe.Pointer(&ev.private_data[0]), C.int(ev.private_len)), Device: dev, Port: int(port)}, nil
	}
}

func (l *CMListener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close stops listening. Requests already returned by Next stay the
// caller's to accept or reject.
func (l *CMListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	// A Next in progress sees closed within one poll slice and returns.
	l.busy.Lock()
	defer l.busy.Unlock()
	for _, id := range l.ids {
		C.rdma_destroy_id(id)
	}
	l.ids = nil
	C.rdma_destroy_event_channel(l.ch)
	return nil
}

// Reject refuses the request, with private data for the requester (at
// most 148 bytes), and frees it.
func (r *CMRequest) Reject(private []byte) error {
	if r.id == nil {
		return nil
	}
	var p unsafe.Pointer
	if len(private) > 0 {
		p = C.CBytes(private)
		defer C.free(p)
	}
	rc, err := C.rdma_reject(r.id, p, C.uint8_t(len(private)))
	C.rdma_destroy_id(r.id)
	r.id = nil
	if rc != 0 {
		return &CMError{Step: "reject", Peer: "the requester", QP: -1, Errno: errnoOf(err)}
	}
	return nil
}

// AcceptCM accepts r's connection for QP qp of the endpoint, without
// waiting for it to be ESTABLISHED: AwaitCM waits for all of them, so
// that the requesters' connections proceed side by side. The request
// moves to the endpoint, which frees it with its QPs.
func (e *Endpoint) AcceptCM(r *CMRequest, qp int, attrs QPAttrs) error {
	if qp < 0 || qp >= len(e.qps) {
		return fmt.Errorf("rdma: a CM request for QP %d; %s has %d QPs", qp, e.cfg.Device, len(e.qps))
	}
	if err := attrs.Validate(); err != nil {
		return err
	}
	fail := func(step string, ev CMEvent, status int, errno error, waited time.Duration, detail string) error {
		return &CMError{Step: step, Peer: "the requester", QP: qp, Event: ev, Status: status, Errno: errno, Waited: waited, Detail: detail}
	}
	if err := e.checkCMDevice(r.id, func(d string) error { return fail("accept", CMConnectRequest, 0, nil, 0, d) }); err != nil {
		return err
	}
	c, err := e.cmConn(attrs)
	if err != nil {
		return err
	}
	if err := e.cmPrepare(); err != nil {
		return err
	}
	if e.cmIDs[qp] != nil {
		return fmt.Errorf("rdma: a second CM request for QP %d of %s", qp, e.cfg.Device)
	}
	if rc, err := C.rdma_migrate_id(r.id, e.cmCh); rc != 0 {
		return fail("accept", 0, 0, errnoOf(err), 0, "rdma_migrate_id")
	}
	id := r.id
	r.id = nil
	e.cmIDs[qp] = id
	e.cmTimes[qp] = CMTimes{}
	begin := time.Now()
	var stage C.int
	if e.transport != TransportIWARP { // iWARP's CM moves the QP itself
		if rc := C.rr_cm_qp_ready(id, e.qps[qp], &c, &stage); rc != 0 {
			return cmReadyErr(e.cfg.Device, stage, rc)
		}
	}
	if rc := C.rr_cm_connect(id, e.qps[qp].qp_num, &c, nil, 0, 1); rc != 0 {
		return fail("accept", 0, 0, syscall.Errno(rc), 0, "")
	}
	e.cmAccepted[qp] = begin
	return nil
}

// AwaitCM waits until deadline for every QP AcceptCM accepted to be
// ESTABLISHED, in whatever order the requesters' answers come; then the
// endpoint is connected, with the driver's attributes recorded as after
// Connect. Each QP's Connect time runs from its accept to its
// ESTABLISHED.
func (e *Endpoint) AwaitCM(attrs QPAttrs, deadline time.Time) error {
	if e.cmIDs == nil {
		return fmt.Errorf("rdma: no QP of %s was accepted through the CM", e.cfg.Device)
	}
	qpOf := map[*C.struct_rdma_cm_id]int{}
	for i, id := range e.cmIDs {
		if id == nil {
			return fmt.Errorf("rdma: QP %d of %s was not accepted through the CM", i, e.cfg.Device)
		}
		if e.cmTimes[i].Connect == 0 {
			qpOf[id] = i
		}
	}
	begin := time.Now()
	for len(qpOf) > 0 {
		ev, ok, err := cmNext(e.cmCh, deadline, nil)
		if err != nil {
			return &CMError{Step: "accept", Peer: "the requester", QP: -1, Errno: err}
		}
		if !ok {
			waiting := slices.Sorted(maps.Values(qpOf))
			return &CMError{Step: "accept", Peer: "the requester", QP: waiting[0], Waited: time.Since(begin).Round(time.Millisecond),
				Detail: fmt.Sprintf("%d of %d QPs not ESTABLISHED", len(waiting), len(e.cmIDs))}
		}
		qp, mine := qpOf[ev.id]
		if !mine {
			continue // a QP already ESTABLISHED; its later events (a disconnect) do not concern the set-up
		}
		if got := CMEvent(ev.event); got != CMEstablished {
			return &CMError{Step: "accept", Peer: "the requester", QP: qp, Event: got, Status: int(ev.status)}
		}
		e.cmTimes[qp].Connect = time.Since(e.cmAccepted[qp])
		delete(qpOf, ev.id)
	}
	return e.cmConnected(attrs)
}
