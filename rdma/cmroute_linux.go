//go:build linux && cgo && !nordma

package rdma

/*
#include <stdlib.h>
#include "cm.h"
*/
import "C"

import (
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// ResolveCM resolves the address and route from src to dst through the
// CM, as a connection's first two steps do, and connects nothing. Each
// step waits at most timeout; address resolution is tried in attempts
// of cmAddrAttempt, as ConnectCM does.
func ResolveCM(src, dst netip.Addr, timeout time.Duration) (CMRoute, error) {
	r := CMRoute{Src: src, Dst: dst}
	ch, err := newCMChannel()
	if err != nil {
		return r, err
	}
	defer C.rdma_destroy_event_channel(ch)
	var id *C.struct_rdma_cm_id
	defer func() {
		if id != nil {
			C.rdma_destroy_id(id)
		}
	}()
	peer := dst.String()
	fail := func(step string, ev CMEvent, status int, errno error, waited time.Duration) error {
		return &CMError{Step: step, Peer: peer, QP: -1, Event: ev, Status: status, Errno: errno, Waited: waited, Detail: "from " + src.String()}
	}
	csrc, cdst := cmIP(src), cmIP(dst)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cdst))

	begin := time.Now()
	end := begin.Add(timeout)
	for tries := 0; ; {
		if id != nil {
			C.rdma_destroy_id(id)
			id = nil
		}
		if rc, err := C.rdma_create_id(ch, &id, nil, C.RDMA_PS_TCP); rc != 0 {
			return r, fail("resolve_addr", 0, 0, errnoOf(err), 0)
		}
		attempt := cmAddrAttempt(tries, time.Until(end))
		tries++
		if rc := C.rr_cm_resolve_addr(id, csrc, 1, cdst, 0, C.int(attempt.Milliseconds())); rc != 0 {
			return r, fail("resolve_addr", 0, 0, syscall.Errno(rc), 0)
		}
		ev, ok, err := cmNext(ch, time.Now().Add(attempt+time.Second), nil)
		switch {
		case err != nil:
			return r, fail("resolve_addr", 0, 0, err, 0)
		case !ok:
			return r, fail("resolve_addr", 0, 0, nil, time.Since(begin).Round(time.Millisecond))
		case CMEvent(ev.event) == CMAddrError && ev.status == -C.ETIMEDOUT && time.Now().Before(end):
			continue
		case CMEvent(ev.event) != CMAddrResolved:
			return r, fail("resolve_addr", CMEvent(ev.event), int(ev.status), nil, 0)
		}
		break
	}
	r.ResolveAddr = time.Since(begin)
	var port C.uint8_t
	r.Device = C.GoString(C.rr_cm_device(id, &port))
	r.Port = int(port)
	sgid, dgid := make([]byte, 16), make([]byte, 16)
	C.rr_cm_gids(id, (*C.uint8_t)(unsafe.Pointer(&sgid[0])), (*C.uint8_t)(unsafe.Pointer(&dgid[0])))
	r.SGID, r.DGID = GIDAddr(sgid), GIDAddr(dgid)

	begin = time.Now()
	if rc, err := C.rdma_resolve_route(id, C.int(timeout.Milliseconds())); rc != 0 {
		return r, fail("resolve_route", 0, 0, errnoOf(err), 0)
	}
	ev, ok, err := cmNext(ch, begin.Add(timeout+time.Second), nil)
	switch {
	case err != nil:
		return r, fail("resolve_route", 0, 0, err, 0)
	case !ok:
		return r, fail("resolve_route", 0, 0, nil, time.Since(begin).Round(time.Millisecond))
	case CMEvent(ev.event) != CMRouteResolved:
		return r, fail("resolve_route", CMEvent(ev.event), int(ev.status), nil, 0)
	}
	r.ResolveRoute = time.Since(begin)
	return r, nil
}
