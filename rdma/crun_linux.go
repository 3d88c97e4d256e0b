//go:build linux && cgo && !nordma

package rdma

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// cRun holds the C memory of one side's run; free releases all of it.
type cRun struct {
	r      *C.struct_rr_run
	allocs []unsafe.Pointer
}

func (c *cRun) calloc(n, size uintptr) (unsafe.Pointer, error) {
	p := C.calloc(C.size_t(max(n, 1)), C.size_t(size))
	if p == nil {
		return nil, fmt.Errorf("rdma: allocating %d bytes for the run: %w", n*size, syscall.ENOMEM)
	}
	c.allocs = append(c.allocs, p)
	return p, nil
}

func (c *cRun) free() {
	for _, p := range c.allocs {
		C.free(p)
	}
	c.allocs = nil
}

// build lays out the side's run: the run struct, one worker per thread,
// each worker's QP views, histogram and WR templates.
func (s *SideRun) build(peer EndpointInfo) (_ *cRun, err error) {
	spec, e := s.spec, s.e
	c := &cRun{}
	defer func() {
		if err != nil {
			c.free()
		}
	}()
	p, err := c.calloc(1, unsafe.Sizeof(C.struct_rr_run{}))
	if err != nil {
		return nil, err
	}
	r := (*C.struct_rr_run)(p)
	c.r = r
	r.notify_fd, r.wake_fd = -1, -1 // calloc's 0 would be stdin
	r.op = C.int(spec.Op)
	r.measure = C.int(spec.Measure)
	r.size = C.uint32_t(spec.Size)
	if spec.Inline > 0 {
		r.max_inline = C.uint32_t(min(e.inline, peer.MaxInline, spec.Inline))
	}
	r.tx_depth = C.uint32_t(spec.TxDepth)
	r.rx_depth = C.uint32_t(spec.RxDepth)
	r.recv_len = C.uint32_t(e.cfg.MaxMessage + e.cfg.grhBytes())
	if e.srq != nil {
		r.srq = e.srq
		r.srq_depth = C.uint32_t(e.cfg.SRQDepth)
		r.srq_left = C.uint64_t(e.srqLeft)
	}
	if spec.QPType == UD {
		r.ud = 1
		r.grh = C.uint32_t(e.cfg.grhBytes())
		r.lost_ns = C.int64_t(time.Duration(spec.LossTimeout).Nanoseconds())
	}
	r.cq_mod = C.uint32_t(spec.CQModeration)
	r.post_list = C.uint32_t(spec.PostList)
	r.stall_ns = C.int64_t(spec.StallWindow().Nanoseconds())
	r.stall_cap_ns = C.int64_t(spec.StallLimit().Nanoseconds())
	r.port_rx_fd = -1
	if e.rxCount != nil {
		r.port_rx_fd = C.int(e.rxCount.Fd())
	}
	if spec.Duration > 0 {
		r.duration_ns = C.int64_t(time.Duration(spec.Duration).Nanoseconds())
	} else {
		r.iters = C.uint64_t(spec.Iterations)
	}
	if spec.Measure == MeasureLatency {
		r.warmup = C.uint64_t(spec.Warmup)
	}
	nw := 0
	if s.role != 0 {
		nw = spec.Threads
	}
	if s.role&RoleSend != 0 {
		r.nsenders = C.int(nw)
	}
	if p, err = c.calloc(uintptr(nw), unsafe.Sizeof(C.struct_rr_worker{})); err != nil {
		return nil, err
	}
	r.w = (*C.struct_rr_worker)(p)
	r.nw = C.int(nw)
	s.qio = make([]*C.struct_rr_qp_io, 0, spec.QPs)
	byQP := make([]*C.struct_rr_qp_io, spec.QPs)
	workers := unsafe.Slice(r.w, nw)
	for t := range workers {
		w := &workers[t]
		w.role = C.int(s.role)
		w.side = C.int(s.side)
		w.cpu = -1
		if len(spec.CPUs) > 0 {
			w.cpu = C.int(spec.CPUs[(s.side*spec.Threads+t)%len(spec.CPUs)])
		}
		if spec.Mode == ModeEvent {
			w.ch = e.chans[t%len(e.chans)]
		}
		if spec.Measure == MeasureLatency && s.role&RoleSend != 0 {
			b, err := e.latencyBuffers(t)
			if err != nil {
				return nil, err
			}
			w.hist, w.samples = b.hist, b.samples
		}
		var mine []int
		for i := t; i < spec.QPs; i += spec.Threads {
			mine = append(mine, i)
		}
		if p, err = c.calloc(uintptr(len(mine)), unsafe.Sizeof(C.struct_rr_qp_io{})); err != nil {
			return nil, err
		}
		w.q = (*C.struct_rr_qp_io)(p)
		w.nq = C.int(len(mine))
		ios := unsafe.Slice(w.q, len(mine))
		for k, i := range mine {
			q := &ios[k]
			q.qp = e.qps[i]
			q.cq = e.cqs[i]
			q.rcq = e.recvCQ(i)
			q.sbuf = (*C.uint8_t)(unsafe.Pointer(&e.sendArea(i)[0]))
			q.rbuf = (*C.uint8_t)(unsafe.Pointer(&e.recvBuffer(i)[0]))
			q.lkey = e.mr.lkey
			q.raddr = C.uint64_t(peer.Addr + uint64(i)*peer.Stride)
			q.rkey = C.uint32_t(peer.RKey)
			if spec.QPType == UD {
				q.ah = e.ah
				q.remote_qpn = C.uint32_t(peer.QPNs[i])
				q.remote_qkey = C.uint32_t(e.remoteQKey)
			}
			q.recv_posted = C.uint64_t(e.recvLeft[i])
			if p, err = c.calloc(uintptr(spec.PostList), unsafe.Sizeof(C.struct_ibv_send_wr{})); err != nil {
				return nil, err
			}
			q.wrs = (*C.struct_ibv_send_wr)(p)
			if p, err = c.calloc(uintptr(spec.PostList), unsafe.Sizeof(C.struct_ibv_sge{})); err != nil {
				return nil, err
			}
			q.sges = (*C.struct_ibv_sge)(p)
			byQP[i] = q
		}
		if len(e.recvCQs) > 0 {
			if err := c.qpnTable(w, ios); err != nil {
				return nil, err
			}
		}
		s.ws = append(s.ws, w)
	}
	for _, q := range byQP {
		if q != nil {
			s.qio = append(s.qio, q)
		}
	}
	return c, nil
}

// qpnTable gives w the table that finds, by QP number, which of its QPs
// a completion on their shared receive CQ belongs to (loop.c, owner).
func (c *cRun) qpnTable(w *C.struct_rr_worker, ios []C.struct_rr_qp_io) error {
	slots := 1
	for slots < 2*len(ios) {
		slots *= 2
	}
	p, err := c.calloc(uintptr(slots), unsafe.Sizeof((*C.struct_rr_qp_io)(nil)))
	if err != nil {
		return err
	}
	w.by_qpn = (**C.struct_rr_qp_io)(p)
	w.qpn_mask = C.uint32_t(slots - 1)
	table := unsafe.Slice(w.by_qpn, slots)
	for k := range ios {
		j := uint32(ios[k].qp.qp_num) & uint32(w.qpn_mask)
		for table[j] != nil {
			j = (j + 1) & uint32(w.qpn_mask)
		}
		table[j] = &ios[k]
	}
	return nil
}

// error turns the first real failure of a worker into a typed error. A
// worker that only stopped because another failed explains nothing.
func (s *SideRun) error() error {
	var w *C.struct_rr_worker
	for _, x := range s.ws {
		if x.fail != C.RR_OK && x.fail != C.RR_FAIL_STOPPED {
			w = x
			break
		}
	}
	if w == nil {
		return ErrStopped
	}
	dev := s.e.cfg.Device
	switch w.fail {
	case C.RR_FAIL_POST:
		return &VerbsError{Op: "ibv_post_send/recv", Device: dev, Errno: syscall.Errno(w.err_errno)}
	case C.RR_FAIL_POLL:
		return &VerbsError{Op: "ibv_poll_cq", Device: dev, Errno: syscall.Errno(w.err_errno)}
	case C.RR_FAIL_EVENT:
		return &VerbsError{Op: "completion channel", Device: dev, Errno: syscall.Errno(w.err_errno)}
	case C.RR_FAIL_THREAD:
		return fmt.Errorf("rdma: starting or pinning a worker thread on %s: %w (is the CPU list valid?)", dev, syscall.Errno(w.err_errno))
	case C.RR_FAIL_VALIDATE:
		return &ValidationError{Op: s.spec.Op, QP: -1, What: fmt.Sprintf("%s returned a value other than the one the target word held, at iteration %d", s.spec.Op, uint64(w.fail_iter))}
	case C.RR_FAIL_WC:
		return &CompletionError{
			Status:      WCStatus(w.wc_status),
			Description: C.GoString(C.ibv_wc_status_str(uint32(w.wc_status))),
			VendorErr:   uint32(w.vendor_err),
			Opcode:      int(w.wc_opcode),
			QPN:         uint32(w.wc_qpn),
			Device:      dev,
			Iteration:   uint64(w.fail_iter),
		}
	case C.RR_FAIL_STALL:
		what := map[C.int]string{
			C.RR_WAIT_PEER_DATA: "the peer's write to arrive",
			C.RR_WAIT_SEND_COMP: "send completions",
			C.RR_WAIT_RECV_COMP: "a receive completion (the peer's message)",
		}[C.int(w.waiting)]
		st := &StallError{
			Waited:      time.Duration(w.stall_waited_ns),
			Waiting:     what,
			Device:      dev,
			Iteration:   uint64(w.fail_iter),
			Quiet:       s.spec.StallWindow(),
			Limit:       s.spec.StallLimit(),
			Extended:    int(w.stall_extended),
			PortCounter: s.e.rxCountName,
		}
		if s.spec.Measure == MeasureBandwidth {
			st.Window = uint64(s.spec.CQModeration) * uint64(s.spec.Size) * uint64(w.nq)
			st.CQModeration = s.spec.CQModeration
		}
		return st
	}
	return fmt.Errorf("rdma: run failed with unknown code %d", int(w.fail))
}

// latencyBuffers are one latency worker's histogram and sample batch, in
// C memory kept with the endpoint from run to run. A fresh quarter-MiB
// histogram per run was a calloc and a memset per probe; a run touches a
// few dozen buckets, and Result zeroes just those.
type latencyBuffers struct {
	hist    *C.uint64_t
	samples *C.uint64_t
	// dirty: a run may have counted into hist without Result zeroing
	// it (it failed, or nobody asked), so the next run clears it whole.
	dirty bool
}

// latencyBuffers returns worker t's buffers, allocated on first use and
// clean, and marks them in use.
func (e *Endpoint) latencyBuffers(t int) (*latencyBuffers, error) {
	for len(e.lat) <= t {
		e.lat = append(e.lat, &latencyBuffers{})
	}
	b := e.lat[t]
	if b.hist == nil {
		h := C.calloc(C.RR_HIST_BUCKETS, 8)
		smp := C.calloc(C.RR_SAMPLE_BATCH, 8)
		if h == nil || smp == nil {
			C.free(h)
			C.free(smp)
			return nil, fmt.Errorf("rdma: allocating the latency histogram: %w", syscall.ENOMEM)
		}
		b.hist, b.samples = (*C.uint64_t)(h), (*C.uint64_t)(smp)
	} else if b.dirty {
		C.memset(unsafe.Pointer(b.hist), 0, C.RR_HIST_BUCKETS*8)
	}
	b.dirty = true
	return b, nil
}

// takeHistogram lists the non-empty buckets of worker t's histogram and
// zeroes them, leaving the buffer clean for the next run. lo and hi are
// the least and greatest value the run counted (hi < lo: none), so only
// the buckets between theirs are read: the whole quarter MiB was 6% of an
// exporter's Go CPU in the VM, read for a few dozen buckets per probe.
func (e *Endpoint) takeHistogram(t int, lo, hi uint64) []bucketCount {
	b := e.lat[t]
	b.dirty = false
	if hi < lo {
		return nil
	}
	dense := unsafe.Slice((*uint64)(unsafe.Pointer(b.hist)), C.RR_HIST_BUCKETS)
	first, last := bucketIndex(lo), bucketIndex(hi)
	bs := nonEmptyFrom(dense[first:last+1], first)
	for _, x := range bs {
		dense[x.idx] = 0
	}
	return bs
}

// cBucketIndex is the C loop's bucket for v, for tests that hold
// bucketIndex to it.
func cBucketIndex(v uint64) int { return int(C.rr_hist_index(C.uint64_t(v))) }

// freeLatencyBuffers frees what latencyBuffers allocated.
func (e *Endpoint) freeLatencyBuffers() {
	for _, b := range e.lat {
		C.free(unsafe.Pointer(b.hist))
		C.free(unsafe.Pointer(b.samples))
	}
	e.lat = nil
}
