//go:build linux && cgo && !nordma

package rdma

/*
#include "shim.h"
*/
import "C"

import "fmt"

// connectUD readies a UD endpoint's QPs and makes the address handle of
// the peer's port: a UD QP has no peer of its own, each send names one
// (the handle, and the peer QP of the same index). a.MTU is the path MTU, which bounds a UD
// message (Prepare checks the test's size against it).
func (e *Endpoint) connectUD(remote EndpointInfo, a QPAttrs, mtuFrom string) error {
	if remote.QKey == 0 {
		return fmt.Errorf("rdma: the peer %s sent no Q_Key; is it a UD endpoint (and an rdmarun that runs UD)?", remote.Device)
	}
	for i, qp := range e.qps {
		if rc := C.rr_ud_qp_to_rts(qp, C.uint32_t(e.psns[i])); rc != 0 {
			return rcErr("ibv_modify_qp(RTR, RTS)", e.cfg.Device, rc)
		}
	}
	c := C.struct_rr_conn{
		dlid:          C.uint16_t(remote.LID),
		port:          C.uint8_t(e.cfg.Port),
		sgid_index:    C.uint8_t(e.gid.Index),
		hop_limit:     C.uint8_t(a.HopLimit),
		traffic_class: C.uint8_t(a.TrafficClass),
		sl:            C.uint8_t(a.SL),
	}
	if err := e.routeTo(&c, remote); err != nil {
		return err
	}
	ah, err := C.rr_create_ah(e.pd, &c)
	if ah == nil {
		return verbsErr("ibv_create_ah", e.cfg.Device, err)
	}
	e.ah = ah
	e.remoteQKey, e.mtuFrom = remote.QKey, mtuFrom
	e.attrs = QPAttrs{MTU: a.MTU, SL: a.SL, TrafficClass: a.TrafficClass, HopLimit: a.HopLimit}
	e.ready = true
	return nil
}
