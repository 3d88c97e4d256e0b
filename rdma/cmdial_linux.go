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
	"syscall"
	"time"
	"unsafe"
)

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
