//go:build linux && cgo && !nordma

package rdma

/*
#include <stdlib.h>
#include "cm.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// MulticastQPN is the QP number a send to a multicast group names: every
// QP attached to the group takes the message.
const MulticastQPN = 0xFFFFFF

// multicastJoin is what an endpoint keeps of its group: the CM id that
// joined it, the group, and the join's address of its members, which
// Close detaches the QP from before the id leaves.
type multicastJoin struct {
	id       *C.struct_rdma_cm_id
	group    netip.Addr
	ah       C.struct_ibv_ah_attr
	attached bool
}

// JoinMulticast joins the UD endpoint to a multicast group (an IPv4 or
// IPv6 multicast address) through the RDMA CM, from the endpoint's own
// address, within timeout, and readies its QP: a receiver's QP is attached
// to the group and takes the group's Q_Key; a sender's sends go to the
// group's address (run it with a peer whose QPN is MulticastQPN, see
// MulticastPeer). On RoCE the CM's join also joins the group on the
// netdev (IGMP or MLD), so switches that snoop deliver it, and the
// receiving kernel's IP layer takes the group's packets. a.MTU (or the
// port's active MTU) bounds the message size, as on any UD path.
func (e *Endpoint) JoinMulticast(group netip.Addr, send bool, a QPAttrs, timeout time.Duration) error {
	switch {
	case e.cfg.QPType != UD:
		return fmt.Errorf("rdma: multicast needs UD QPs; %s has %s QPs", e.cfg.Device, e.cfg.QPType)
	case len(e.qps) != 1:
		return fmt.Errorf("rdma: multicast runs one QP per endpoint; %s has %d", e.cfg.Device, len(e.qps))
	case !group.IsMulticast():
		return fmt.Errorf("rdma: %s is not a multicast address (IPv4 224.0.0.0/4, IPv6 ff00::/8)", group)
	case e.ready || e.mcast != nil:
		return fmt.Errorf("rdma: the QP of %s is already connected or joined", e.cfg.Device)
	}
	if err := a.Validate(); err != nil {
		return err
	}
	src, err := e.CMAddress()
	if err != nil {
		return err
	}
	if e.cmCh == nil {
		ch, err := newCMChannel()
		if err != nil {
			return err
		}
		e.cmCh = ch
	}
	peer := group.String()
	fail := func(ev CMEvent, status int, errno error, waited time.Duration, detail string) error {
		return &CMError{Step: "join_multicast", Peer: peer, QP: 0, Event: ev, Status: status, Errno: errno, Waited: waited, Detail: detail}
	}
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(e.cmCh, &id, nil, C.RDMA_PS_UDP); rc != 0 {
		return fail(0, 0, errnoOf(err), 0, "rdma_create_id")
	}
	e.mcast = &multicastJoin{id: id, group: group}
	csrc, cgroup := cmIP(src), cmIP(group)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cgroup))
	var stage C.int
	begin := time.Now()
	if rc := C.rr_mcast_join(id, csrc, cgroup, &stage); rc != 0 {
		if stage == 0 {
			return fail(0, 0, syscall.Errno(rc), 0, "binding to "+src.String())
		}
		return fail(0, 0, syscall.Errno(rc), 0, "from "+src.String())
	}
	if err := e.checkCMDevice(id, func(d string) error { return fail(0, 0, nil, 0, d) }); err != nil {
		return err
	}
	ev, ok, err := cmNext(e.cmCh, begin.Add(timeout), nil)
	switch {
	case err != nil:
		return fail(0, 0, err, 0, "")
	case !ok:
		return fail(0, 0, nil, time.Since(begin).Round(time.Millisecond), "from "+src.String())
	case CMEvent(ev.event) != CMMulticastJoin:
		return fail(CMEvent(ev.event), int(ev.status), nil, 0, "from "+src.String())
	}
	e.mcast.ah = ev.ah_attr
	qp := e.qps[0]
	if rc := C.rr_ud_qp_to_rts(qp, C.uint32_t(e.psns[0])); rc != 0 {
		return rcErr("ibv_modify_qp(RTR, RTS)", e.cfg.Device, rc)
	}
	if send {
		ah, err := C.ibv_create_ah(e.pd, &e.mcast.ah)
		if ah == nil {
			return verbsErr("ibv_create_ah (the multicast group's)", e.cfg.Device, err)
		}
		e.ah = ah
		e.remoteQKey = uint32(ev.qkey)
	} else {
		if rc := C.rr_mcast_qkey(qp, ev.qkey); rc != 0 {
			return rcErr("ibv_modify_qp(Q_Key of the multicast group)", e.cfg.Device, rc)
		}
		if rc := C.rr_mcast_attach(qp, &e.mcast.ah, 1); rc != 0 {
			return rcErr("ibv_attach_mcast", e.cfg.Device, rc)
		}
		e.mcast.attached = true
	}
	e.mtuFrom = "qp_attrs.mtu_bytes"
	if a.MTU == 0 {
		// The group's members are not known here; each receiver's own
		// port bounds what it takes, so a sender's MTU is its own.
		a.MTU, e.mtuFrom = e.port.ActiveMTU, fmt.Sprintf("%s's active MTU", e.cfg.Device)
	}
	e.attrs = QPAttrs{MTU: a.MTU, SL: a.SL, TrafficClass: a.TrafficClass, HopLimit: a.HopLimit}
	e.ready = true
	return nil
}

// MulticastPeer is the peer a multicast sender runs against: the group,
// whose members all answer to MulticastQPN, on the sender's own device.
func (e *Endpoint) MulticastPeer() EndpointInfo {
	info := e.Info()
	info.QPNs = []uint32{MulticastQPN}
	return info
}

// closeMulticast detaches the QP from its group and leaves it; Close
// calls it while the QP still exists.
func (e *Endpoint) closeMulticast() error {
	m := e.mcast
	if m == nil {
		return nil
	}
	e.mcast = nil
	var errs []error
	if m.attached {
		errs = append(errs, rcErr("ibv_detach_mcast", e.cfg.Device, C.rr_mcast_attach(e.qps[0], &m.ah, 0)))
	}
	cgroup := cmIP(m.group)
	defer C.free(unsafe.Pointer(cgroup))
	if rc := C.rr_mcast_leave(m.id, cgroup); rc != 0 && rc != C.int(syscall.EINVAL) {
		// EINVAL: the join never completed, so there is nothing to leave.
		errs = append(errs, rcErr("rdma_leave_multicast", e.cfg.Device, rc))
	}
	C.rdma_destroy_id(m.id)
	return errors.Join(errs...)
}
