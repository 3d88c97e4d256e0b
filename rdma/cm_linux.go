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
	"net/netip"
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
