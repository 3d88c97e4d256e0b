//go:build linux && cgo && !nordma

package rdma

/*
#include <stdlib.h>
#include "shim.h"
#include "cm.h"
#include "siw.h"
*/
import "C"

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/sysfs"
)

// Endpoint owns a device context, a PD, a registered buffer off the Go
// heap, and N QPs, each with its own CQ and buffer slot (a send area and a
// receive area). In event mode the CQs report to completion channels.
// Close frees everything in the order the verbs API requires.
type Endpoint struct {
	cfg    EndpointConfig
	port   Port
	gid    GID
	psns   []uint32
	inline int
	slot   int // bytes per area; a QP's slot holds two
	ctx    *C.struct_ibv_context
	pd     *C.struct_ibv_pd
	chans  []*C.struct_ibv_comp_channel
	cqs    []*C.struct_ibv_cq // QP i's, its sends and (without an SRQ) receives
	// recvCQs are the receive CQs of QPs sharing a receive queue, QP i's
	// being recvCQs[i % len] (cfg.RecvCQs).
	recvCQs []*C.struct_ibv_cq
	// mcast is the multicast group a UD endpoint joined (JoinMulticast).
	mcast *multicastJoin
	// siwPlug holds a page of a soft-iWARP context that no queue can
	// use (siw.c); nil on every other device.
	siwPlug *C.struct_ibv_cq
	qps     []*C.struct_ibv_qp
	// ah is a UD endpoint's address handle of the peer's port (Connect),
	// which every QP's sends name with the peer QP's number; qkey is the
	// QPs' Q_Key, and remoteQKey the peer's.
	ah *C.struct_ibv_ah
	// srq is the QPs' shared receive queue (cfg.SRQDepth > 0), and
	// srqLeft the receives a finished run left in it.
	srq        *C.struct_ibv_srq
	srqLeft    uint64
	qkey       uint32
	remoteQKey uint32
	// mtuFrom says where a UD endpoint's path MTU came from, for the
	// error of a message above it.
	mtuFrom string
	mr      *C.struct_ibv_mr
	mem     []byte // mmap'ed: registered memory must not move, so it is never Go heap
	attrs   QPAttrs
	closed  bool
	ready   bool
	// recvLeft counts, per QP, the receives a finished run left posted;
	// the next run on the same QPs tops up to its rx_depth from there.
	recvLeft []uint64
	lat      []*latencyBuffers
	// wake is the event-mode runs' wake_fd (see rr_run), made by the
	// first such run and kept to Close: a prober runs every few seconds,
	// and an eventfd per run is two system calls it need not pay.
	wake int
	// runner is the thread the endpoint's runs start on, parked between
	// them, and runDone the eventfd it writes as each run's workers
	// finish (see rr_runner); both made by the first run, kept to Close.
	runner  *C.struct_rr_runner
	runDone *os.File
	// counters is the port whose counters every run reads before and
	// after (unless cfg.SkipPortCounters), its drivers and netdev looked
	// up once here rather than twice per run.
	counters portstats.Port
	// rxCount is the port's received-packet counter, kept open for the
	// loop's stall rule (rr_run.port_rx_fd), and rxCountName its path
	// under the port; nil when the port has none.
	rxCount     *os.File
	rxCountName string
	// cmCh, cmIDs and cmTimes are set when the QPs were connected through
	// the CM (ConnectCM, AcceptCM): the event channel, one id per QP, and
	// each QP's set-up times; cmAccepted is when each QP was accepted,
	// and cmElapsed how long ConnectCM took for all of them.
	cmCh       *C.struct_rdma_event_channel
	cmIDs      []*C.struct_rdma_cm_id
	cmTimes    []CMTimes
	cmAccepted []time.Time
	cmElapsed  time.Duration
	// transport is what the device speaks; atomics whether its
	// attributes offer atomic operations (checkCapable).
	transport Transport
	atomics   bool
}

// rxCounters are the port counters that count packets the port received,
// in the order they are tried: the IB counter set (InfiniBand and most
// RoCE NICs), then soft-RoCE's, then bytes where packets are missing.
var rxCounters = []string{"counters/port_rcv_packets", "hw_counters/rcvd_pkts", "counters/port_rcv_data"}

// openRxCounter opens the first of rxCounters the port has.
func openRxCounter(device string, port int) (*os.File, string) {
	for _, name := range rxCounters {
		f, err := os.Open(filepath.Join(sysfs.Root, device, "ports", strconv.Itoa(port), name))
		if err == nil {
			return f, name
		}
	}
	return nil, ""
}

const accessAll = C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_REMOTE_WRITE | C.IBV_ACCESS_REMOTE_READ | C.IBV_ACCESS_REMOTE_ATOMIC

// NewEndpoint opens the device and creates the PD, buffer, MR, channels,
// CQs and QPs (in INIT). On error everything created so far is freed.
func NewEndpoint(cfg EndpointConfig) (ep *Endpoint, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	dev, err := findDevice(cfg.Device)
	if err != nil {
		return nil, err
	}
	port, err := dev.Port(cfg.Port)
	if err != nil {
		return nil, err
	}
	if !port.Active() {
		return nil, &PortDownError{Device: cfg.Device, Port: cfg.Port, State: port.State}
	}
	gid, err := port.SelectGID(cfg.GIDIndex)
	if err != nil {
		return nil, fmt.Errorf("rdma: %s: %w", cfg.Device, err)
	}
	e := &Endpoint{cfg: cfg, port: *port, gid: gid, slot: slotBytes(cfg.MaxMessage + cfg.grhBytes()), wake: -1}
	if !cfg.SkipPortCounters {
		e.counters = portstats.NewPort("", cfg.Device, cfg.Port)
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	e.rxCount, e.rxCountName = openRxCounter(cfg.Device, cfg.Port)
	if e.ctx, err = openContext(cfg.Device); err != nil {
		return nil, err
	}
	var attr C.struct_ibv_device_attr
	if rc := C.ibv_query_device(e.ctx, &attr); rc != 0 {
		return nil, rcErr("ibv_query_device", cfg.Device, rc)
	}
	e.atomics = attr.atomic_cap != C.IBV_ATOMIC_NONE
	limits := limitsOf(&attr)
	extraCQs := 0
	if attr.vendor_id == C.RR_SIW_VENDOR_ID && e.ctx.device.transport_type == C.IBV_TRANSPORT_IWARP {
		extraCQs = 1 // siw.c's plug
	}
	// Before any QP exists: a test above the device's limits is refused
	// naming the limit, not failed by the driver part way through.
	if err := limits.fits(cfg.Device, cfg, extraCQs); err != nil {
		return nil, err
	}
	switch {
	case e.ctx.device.transport_type == C.IBV_TRANSPORT_IWARP:
		e.transport = TransportIWARP
	case port.LinkLayer == "Ethernet":
		e.transport = TransportRoCE
	default:
		e.transport = TransportIB
	}
	if e.transport == TransportIWARP && cfg.QPType != RC {
		return nil, fmt.Errorf("rdma: %s is an iWARP device, which has reliable connected (rc) QPs only, not %s", cfg.Device, cfg.QPType)
	}
	if e.transport == TransportIWARP && attr.vendor_id == C.RR_SIW_VENDOR_ID {
		if e.siwPlug, err = C.rr_siw_plug_cq(e.ctx); e.siwPlug == nil {
			return nil, verbsErr("ibv_create_cq (the soft-iWARP context's first CQ, siw.c)", cfg.Device, err)
		}
	}
	if e.pd, err = C.ibv_alloc_pd(e.ctx); e.pd == nil {
		return nil, verbsErr("ibv_alloc_pd", cfg.Device, err)
	}
	size := int(cfg.RegisteredBytes())
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if cfg.Hugepages {
		// Huge pages cut the NIC's address-translation misses on large
		// buffers; the kernel needs them reserved beforehand.
		flags |= unix.MAP_HUGETLB
	}
	e.mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		e.mem = nil
		if cfg.Hugepages {
			return nil, fmt.Errorf("rdma: mmap of %d bytes of huge pages: %w (reserve them first: echo %d > /proc/sys/vm/nr_hugepages)", size, err, size/hugePage)
		}
		return nil, fmt.Errorf("rdma: mmap of %d bytes: %w", size, err)
	}
	if e.mr, err = C.rr_reg_mr(e.pd, unsafe.Pointer(&e.mem[0]), C.size_t(len(e.mem)), accessAll); e.mr == nil {
		return nil, verbsErr("ibv_reg_mr", cfg.Device, err)
	}
	if cfg.SRQDepth > 0 {
		if e.srq, err = C.rr_create_srq(e.pd, C.uint32_t(cfg.SRQDepth)); e.srq == nil {
			return nil, verbsErr("ibv_create_srq", cfg.Device, err)
		}
	}
	for range cfg.Channels {
		ch, err := C.ibv_create_comp_channel(e.ctx)
		if ch == nil {
			return nil, verbsErr("ibv_create_comp_channel", cfg.Device, err)
		}
		e.chans = append(e.chans, ch)
	}
	if cfg.QPType == UD {
		e.qkey = randomQKey()
	}
	e.inline = cfg.MaxInline
	channel := func(i int) *C.struct_ibv_comp_channel {
		if len(e.chans) == 0 {
			return nil
		}
		return e.chans[i%len(e.chans)]
	}
	for j := range cfg.RecvCQs {
		cq, err := C.ibv_create_cq(e.ctx, C.int(cfg.recvCQDepth()), nil, channel(j), 0)
		if cq == nil {
			return nil, verbsErr("ibv_create_cq (a shared receive CQ)", cfg.Device, err)
		}
		e.recvCQs = append(e.recvCQs, cq)
	}
	for i := range cfg.QPs {
		cq, err := C.ibv_create_cq(e.ctx, C.int(cfg.cqDepth()), nil, channel(i), 0)
		if cq == nil {
			return nil, verbsErr("ibv_create_cq", cfg.Device, err)
		}
		e.cqs = append(e.cqs, cq)
		var gotInline C.uint32_t
		qp, err := C.rr_create_qp(e.pd, cq, e.recvCQ(i), e.srq, C.int(cfg.QPType), C.uint32_t(cfg.SQDepth), C.uint32_t(cfg.RQDepth), C.uint32_t(cfg.MaxInline), &gotInline)
		if qp == nil {
			return nil, verbsErr("ibv_create_qp", cfg.Device, err)
		}
		e.qps = append(e.qps, qp)
		// Drivers may round the inline size up; post inline only what
		// was asked for.
		e.inline = min(e.inline, int(gotInline))
		if rc := C.rr_qp_to_init(qp, C.uint8_t(cfg.Port), accessAll, C.uint32_t(e.qkey)); rc != 0 {
			return nil, rcErr("ibv_modify_qp(INIT)", cfg.Device, rc)
		}
		e.psns = append(e.psns, randomPSN())
	}
	e.recvLeft = make([]uint64, cfg.QPs)
	return e, nil
}

// recvCQ is the CQ QP i's receives complete on: its own CQ, or with a
// shared receive queue its thread's receive CQ.
func (e *Endpoint) recvCQ(i int) *C.struct_ibv_cq {
	if len(e.recvCQs) == 0 {
		return e.cqs[i]
	}
	return e.recvCQs[i%len(e.recvCQs)]
}

// randomQKey draws a UD endpoint's Q_Key: a datagram whose Q_Key differs
// is dropped, so a stray sender (another run's, another tool's) cannot be
// counted as this run's traffic. The top bit stays clear: Q_Keys with it
// set are the controlled ones only privileged senders may use.
func randomQKey() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:])&0x7fffffff | 1
}

func randomPSN() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) & 0xffffff
}

// Transport is what the endpoint's device speaks.
func (e *Endpoint) Transport() Transport { return e.transport }

// Capable says why the endpoint's device cannot run spec, naming its
// transport or the attribute it lacks; nil when it can.
func (e *Endpoint) Capable(spec Test) error {
	return checkCapable(e.cfg.Device, e.transport, e.atomics, spec)
}

// Info describes the endpoint to its peer.
func (e *Endpoint) Info() EndpointInfo {
	qpns := make([]uint32, len(e.qps))
	for i, qp := range e.qps {
		qpns[i] = uint32(qp.qp_num)
	}
	return EndpointInfo{
		Device:    e.cfg.Device,
		Port:      e.cfg.Port,
		QPNs:      qpns,
		PSNs:      e.psns,
		LID:       e.port.LID,
		GID:       e.gid.GID,
		GIDIndex:  e.gid.Index,
		GIDType:   e.gid.Type,
		LinkLayer: e.port.LinkLayer,
		RKey:      uint32(e.mr.rkey),
		Addr:      uint64(uintptr(unsafe.Pointer(&e.mem[0]))) + uint64(e.recvOffset(0)),
		Stride:    uint64(e.recvOffset(1) - e.recvOffset(0)),
		ActiveMTU: e.port.ActiveMTU,
		MaxInline: e.inline,
		QKey:      e.qkey,
	}
}

// RegisteredBytes is the length of the memory region the endpoint
// registered, as the verbs library reports it: what EndpointConfig's
// RegisteredBytes promised, which a test checks.
func (e *Endpoint) RegisteredBytes() int64 {
	if e.mr == nil {
		return 0
	}
	return int64(e.mr.length)
}

// sendArea is QP i's send area: where its writes and sends leave from,
// and where reads and atomics return their data... for atomics, the
// fetched word. Valid until Close.
func (e *Endpoint) sendArea(i int) []byte {
	off := 2 * e.slot * i
	if e.cfg.SharedRecv {
		off = e.slot * i
	}
	return e.mem[off : off+e.cfg.MaxMessage]
}

// recvOffset is where QP i's receive area starts: its own, or the one
// all QPs share (after every send area).
func (e *Endpoint) recvOffset(i int) int {
	if e.cfg.SharedRecv {
		return e.slot * e.cfg.QPs
	}
	return 2*e.slot*i + e.slot
}

// recvArea is QP i's receive area: where the peer's writes and sends
// land, and what the peer's reads and atomics target.
func (e *Endpoint) recvArea(i int) []byte {
	off := e.recvOffset(i) + e.cfg.grhBytes()
	return e.mem[off : off+e.cfg.MaxMessage]
}

// recvBuffer is where QP i's receives are posted: its receive area,
// after the room for a UD receive's GRH.
func (e *Endpoint) recvBuffer(i int) []byte {
	off := e.recvOffset(i)
	return e.mem[off : off+e.cfg.grhBytes()+e.cfg.MaxMessage]
}

// Connect moves every QP through RTR to RTS towards the peer's QP of the
// same index. The path MTU is the smaller of both ends' active MTUs
// unless attrs names one.
func (e *Endpoint) Connect(remote EndpointInfo, attrs QPAttrs) error {
	if err := attrs.Validate(); err != nil {
		return err
	}
	if e.transport == TransportIWARP {
		return fmt.Errorf("%w (%s)", ErrIWARPExchange, e.cfg.Device)
	}
	a := attrs
	if len(remote.QPNs) != len(e.qps) || len(remote.PSNs) != len(e.qps) {
		return fmt.Errorf("rdma: the peer %s has %d QPs, %s has %d", remote.Device, len(remote.QPNs), e.cfg.Device, len(e.qps))
	}
	if remote.LinkLayer != e.port.LinkLayer {
		return fmt.Errorf("rdma: link layers differ: %s is %s, the peer %s is %s", e.cfg.Device, e.port.LinkLayer, remote.Device, remote.LinkLayer)
	}
	if e.port.LinkLayer == "Ethernet" && remote.GIDType != e.gid.Type {
		return fmt.Errorf("rdma: GID types differ: %s uses %s (index %d), the peer %s uses %s (index %d); choose GID indexes of one type on both ends",
			e.cfg.Device, e.gid.Type, e.gid.Index, remote.Device, remote.GIDType, remote.GIDIndex)
	}
	if a.MTU == 0 {
		a.MTU = min(e.port.ActiveMTU, remote.ActiveMTU)
	}
	mtu, err := MTUEnum(a.MTU)
	if err != nil {
		return err
	}
	if e.cfg.QPType == UD {
		from := "qp_attrs.mtu_bytes"
		if attrs.MTU == 0 {
			from = fmt.Sprintf("the smaller of %s's active MTU %d and the peer %s's %d", e.cfg.Device, e.port.ActiveMTU, remote.Device, remote.ActiveMTU)
		}
		return e.connectUD(remote, a, from)
	}
	for i, qp := range e.qps {
		c := C.struct_rr_conn{
			dest_qpn:           C.uint32_t(remote.QPNs[i]),
			rq_psn:             C.uint32_t(remote.PSNs[i]),
			sq_psn:             C.uint32_t(e.psns[i]),
			dlid:               C.uint16_t(remote.LID),
			port:               C.uint8_t(e.cfg.Port),
			mtu:                C.uint8_t(mtu),
			sgid_index:         C.uint8_t(e.gid.Index),
			hop_limit:          C.uint8_t(a.HopLimit),
			traffic_class:      C.uint8_t(a.TrafficClass),
			sl:                 C.uint8_t(a.SL),
			timeout:            C.uint8_t(a.Timeout),
			retry_cnt:          C.uint8_t(a.RetryCnt),
			rnr_retry:          C.uint8_t(a.RNRRetry),
			min_rnr_timer:      C.uint8_t(a.MinRNRTimer),
			max_rd_atomic:      C.uint8_t(a.MaxRdAtomic),
			max_dest_rd_atomic: C.uint8_t(a.MaxRdAtomic),
		}
		if e.cfg.QPType == UC {
			c.uc = 1
		}
		if err := e.routeTo(&c, remote); err != nil {
			return err
		}
		if rc := C.rr_qp_to_rtr(qp, &c); rc != 0 {
			return rcErr("ibv_modify_qp(RTR)", e.cfg.Device, rc)
		}
		if rc := C.rr_qp_to_rts(qp, &c); rc != 0 {
			return rcErr("ibv_modify_qp(RTS)", e.cfg.Device, rc)
		}
	}
	if e.cfg.QPType == RC {
		// What the driver holds, not what was asked: results record the
		// attributes the QPs really use. UC keeps no timers or retries,
		// so there only the request can be recorded.
		if a, err = e.queryAttrs(a); err != nil {
			return err
		}
	}
	e.attrs = a
	e.ready = true
	return nil
}

// routeTo addresses c to the peer's GID: RoCE always routes by GID;
// InfiniBand needs the GRH only across subnets, so there c keeps the LID.
func (e *Endpoint) routeTo(c *C.struct_rr_conn, remote EndpointInfo) error {
	if e.port.LinkLayer != "Ethernet" {
		return nil
	}
	gid := net.IP(remote.GID).To16()
	if gid == nil {
		return fmt.Errorf("rdma: the peer %s sent no GID", remote.Device)
	}
	c.is_global = 1
	for j := range 16 {
		c.dgid[j] = C.uint8_t(gid[j])
	}
	return nil
}

// queryAttrs reads the first QP's attributes back from the driver over
// asked (every QP of the endpoint is connected alike).
func (e *Endpoint) queryAttrs(asked QPAttrs) (QPAttrs, error) {
	var c C.struct_rr_conn
	if rc := C.rr_qp_query(e.qps[0], &c); rc != 0 {
		return asked, rcErr("ibv_query_qp", e.cfg.Device, rc)
	}
	return QPAttrs{
		MTU: mtuBytes(int(c.mtu)), Timeout: int(c.timeout), RetryCnt: int(c.retry_cnt), RNRRetry: int(c.rnr_retry),
		MinRNRTimer: int(c.min_rnr_timer), MaxRdAtomic: int(c.max_rd_atomic), SL: int(c.sl),
		TrafficClass: int(c.traffic_class), HopLimit: int(c.hop_limit),
	}, nil
}

// Attrs returns the QP attributes in force after Connect, path MTU
// included, as the driver reports them.
func (e *Endpoint) Attrs() QPAttrs { return e.attrs }

// Fail moves every QP to the error state; tests use it to make a peer
// stop answering.
func (e *Endpoint) Fail() error {
	var errs []error
	for _, qp := range e.qps {
		errs = append(errs, rcErr("ibv_modify_qp(ERR)", e.cfg.Device, C.rr_qp_to_err(qp)))
	}
	return errors.Join(errs...)
}

// Close frees the QPs, CQs, channels, MR, buffer, PD and context, in
// that order. It is safe to call more than once, and on a partly built
// endpoint.
func (e *Endpoint) Close() error {
	if e == nil || e.closed {
		return nil
	}
	e.closed = true
	var errs []error
	if e.runner != nil {
		// After the last run: every side was closed, its workers done.
		C.rr_runner_close(e.runner)
		e.runner = nil
		errs = append(errs, e.runDone.Close())
		e.runDone = nil
	}
	if e.wake >= 0 {
		errs = append(errs, unix.Close(e.wake))
		e.wake = -1
	}
	e.freeLatencyBuffers()
	// The QP leaves its multicast group, and the CM's ids go, first:
	// they name QPs that must still exist when the peer is told of the
	// disconnect.
	errs = append(errs, e.closeMulticast())
	e.closeCM()
	for _, qp := range e.qps {
		errs = append(errs, rcErr("ibv_destroy_qp", e.cfg.Device, C.ibv_destroy_qp(qp)))
	}
	e.qps = nil
	if e.srq != nil {
		errs = append(errs, rcErr("ibv_destroy_srq", e.cfg.Device, C.ibv_destroy_srq(e.srq)))
		e.srq = nil
	}
	if e.ah != nil {
		errs = append(errs, rcErr("ibv_destroy_ah", e.cfg.Device, C.ibv_destroy_ah(e.ah)))
		e.ah = nil
	}
	for _, cq := range e.cqs {
		errs = append(errs, rcErr("ibv_destroy_cq", e.cfg.Device, C.ibv_destroy_cq(cq)))
	}
	e.cqs = nil
	for _, cq := range e.recvCQs {
		errs = append(errs, rcErr("ibv_destroy_cq", e.cfg.Device, C.ibv_destroy_cq(cq)))
	}
	e.recvCQs = nil
	if e.siwPlug != nil {
		errs = append(errs, rcErr("ibv_destroy_cq", e.cfg.Device, C.ibv_destroy_cq(e.siwPlug)))
		e.siwPlug = nil
	}
	for _, ch := range e.chans {
		errs = append(errs, rcErr("ibv_destroy_comp_channel", e.cfg.Device, C.ibv_destroy_comp_channel(ch)))
	}
	e.chans = nil
	if e.mr != nil {
		errs = append(errs, rcErr("ibv_dereg_mr", e.cfg.Device, C.ibv_dereg_mr(e.mr)))
		e.mr = nil
	}
	if e.mem != nil {
		errs = append(errs, unix.Munmap(e.mem))
		e.mem = nil
	}
	if e.pd != nil {
		errs = append(errs, rcErr("ibv_dealloc_pd", e.cfg.Device, C.ibv_dealloc_pd(e.pd)))
		e.pd = nil
	}
	if e.ctx != nil {
		errs = append(errs, rcErr("ibv_close_device", e.cfg.Device, C.ibv_close_device(e.ctx)))
		e.ctx = nil
	}
	if e.rxCount != nil {
		errs = append(errs, e.rxCount.Close())
		e.rxCount = nil
	}
	return errors.Join(errs...)
}
