//go:build linux && cgo && !nordma

package rdma

/*
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
)

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
