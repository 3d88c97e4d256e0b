//go:build linux && cgo && !nordma

package rdma

/*
#cgo pkg-config: libibverbs
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -lpthread
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/sysfs"
	"golang.org/x/sys/unix"
)

// Available reports whether this build can talk to RDMA devices.
const Available = true

func verbsErr(op, dev string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno == 0 {
		errno = syscall.EIO
	}
	return &VerbsError{Op: op, Device: dev, Errno: errno}
}

func rcErr(op, dev string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	if rc < 0 {
		rc = -rc
	}
	return &VerbsError{Op: op, Device: dev, Errno: syscall.Errno(rc)}
}

// Devices lists the RDMA devices libibverbs sees, with the kernel's view
// of their ports and the active MTU and GID table that verbs gives.
func Devices() ([]Device, error) {
	names, err := sysfs.DeviceNames(sysfs.Root)
	if err != nil {
		return nil, err
	}
	devs := make([]Device, 0, len(names))
	for _, name := range names {
		d, err := readDevice(name)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

func readDevice(name string) (Device, error) {
	d, err := readSysfsDevice(name, false)
	if err != nil {
		return d, err
	}
	ctx, err := openContext(name)
	if err != nil {
		return d, err
	}
	defer C.ibv_close_device(ctx)
	tableLen := 0
	for j := range d.Ports {
		p := &d.Ports[j]
		var pi C.struct_rr_port_info
		if rc := C.rr_query_port(ctx, C.uint8_t(p.Num), &pi); rc != 0 {
			return d, rcErr("ibv_query_port", name, rc)
		}
		p.ActiveMTU = MTUBytes(int(pi.active_mtu))
		p.MaxMTU = MTUBytes(int(pi.max_mtu))
		tableLen += int(pi.gid_tbl_len)
	}
	if err := queryGIDs(ctx, &d, tableLen); err != nil {
		// Kernels without the GID table ioctl still have sysfs.
		return readSysfsDevice(name, true)
	}
	return d, nil
}

// queryGIDs fills every port's GID table with one ibv_query_gid_table
// call, which returns only the populated entries.
func queryGIDs(ctx *C.struct_ibv_context, d *Device, tableLen int) error {
	if tableLen == 0 {
		return nil
	}
	size := C.size_t(tableLen) * C.size_t(unsafe.Sizeof(C.struct_ibv_gid_entry{}))
	buf := C.malloc(size)
	if buf == nil {
		return syscall.ENOMEM
	}
	defer C.free(buf)
	n, err := C.rr_query_gid_table(ctx, (*C.struct_ibv_gid_entry)(buf), C.size_t(tableLen))
	if n < 0 {
		return verbsErr("ibv_query_gid_table", d.Name, err)
	}
	for _, e := range unsafe.Slice((*C.struct_ibv_gid_entry)(buf), int(n)) {
		p, err := d.Port(int(e.port_num))
		if err != nil {
			continue
		}
		raw := C.GoBytes(unsafe.Pointer(&e.gid), 16)
		g := GID{Index: int(e.gid_index), GID: GIDAddr(raw)}
		switch e.gid_type {
		case C.IBV_GID_TYPE_ROCE_V2:
			g.Type = GIDTypeRoCEv2
		case C.IBV_GID_TYPE_ROCE_V1:
			g.Type = GIDTypeRoCEv1
		default:
			g.Type = GIDTypeIB
		}
		if e.ndev_ifindex != 0 {
			if ifi, err := net.InterfaceByIndex(int(e.ndev_ifindex)); err == nil {
				g.Netdev = ifi.Name
			}
		}
		p.GIDs = append(p.GIDs, g)
	}
	for j := range d.Ports {
		gids := d.Ports[j].GIDs
		sort.Slice(gids, func(a, b int) bool { return gids[a].Index < gids[b].Index })
	}
	return nil
}

func findDevice(name string) (*Device, error) {
	if _, err := os.Stat(filepath.Join(sysfs.Root, name)); err != nil {
		names, _ := sysfs.DeviceNames(sysfs.Root)
		if len(names) == 0 {
			return nil, ErrNoDevice
		}
		return nil, fmt.Errorf("rdma: no device named %q (found: %v)", name, names)
	}
	d, err := readDevice(name)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func openContext(name string) (*C.struct_ibv_context, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, verbsErr("ibv_get_device_list", "", err)
	}
	defer C.ibv_free_device_list(list)
	for _, d := range unsafe.Slice(list, int(n)) {
		if C.GoString(C.ibv_get_device_name(d)) != name {
			continue
		}
		ctx, err := C.ibv_open_device(d)
		if ctx == nil {
			return nil, verbsErr("ibv_open_device", name, err)
		}
		return ctx, nil
	}
	return nil, fmt.Errorf("rdma: libibverbs has no device %q (is its provider library installed? see ibv_devices)", name)
}

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
	cqs    []*C.struct_ibv_cq
	qps    []*C.struct_ibv_qp
	mr     *C.struct_ibv_mr
	mem    []byte // mmap'ed: registered memory must not move, so it is never Go heap
	attrs  QPAttrs
	closed bool
	ready  bool
	// recvLeft counts, per QP, the receives a finished run left posted;
	// the next run on the same QPs tops up to its rx_depth from there.
	recvLeft []uint64
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
	if port.State != "ACTIVE" {
		return nil, &PortDownError{Device: cfg.Device, Port: cfg.Port, State: port.State}
	}
	gid, err := port.SelectGID(cfg.GIDIndex)
	if err != nil {
		return nil, fmt.Errorf("rdma: %s: %w", cfg.Device, err)
	}
	e := &Endpoint{cfg: cfg, port: *port, gid: gid, slot: (cfg.MaxMessage + 63) &^ 63}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.ctx, err = openContext(cfg.Device); err != nil {
		return nil, err
	}
	if e.pd, err = C.ibv_alloc_pd(e.ctx); e.pd == nil {
		return nil, verbsErr("ibv_alloc_pd", cfg.Device, err)
	}
	size := bufferBytes(2 * e.slot * cfg.QPs)
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if cfg.Hugepages {
		// Huge pages cut the NIC's address-translation misses on large
		// buffers; the kernel needs them reserved beforehand.
		size = (size + hugePage - 1) / hugePage * hugePage
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
	for range cfg.Channels {
		ch, err := C.ibv_create_comp_channel(e.ctx)
		if ch == nil {
			return nil, verbsErr("ibv_create_comp_channel", cfg.Device, err)
		}
		e.chans = append(e.chans, ch)
	}
	uc := C.int(0)
	if cfg.QPType == UC {
		uc = 1
	}
	e.inline = cfg.MaxInline
	for i := range cfg.QPs {
		var ch *C.struct_ibv_comp_channel
		if len(e.chans) > 0 {
			ch = e.chans[i%len(e.chans)]
		}
		cq, err := C.ibv_create_cq(e.ctx, C.int(cfg.SQDepth+cfg.RQDepth+16), nil, ch, 0)
		if cq == nil {
			return nil, verbsErr("ibv_create_cq", cfg.Device, err)
		}
		e.cqs = append(e.cqs, cq)
		var gotInline C.uint32_t
		qp, err := C.rr_create_qp(e.pd, cq, uc, C.uint32_t(cfg.SQDepth), C.uint32_t(cfg.RQDepth), C.uint32_t(cfg.MaxInline), &gotInline)
		if qp == nil {
			return nil, verbsErr("ibv_create_qp", cfg.Device, err)
		}
		e.qps = append(e.qps, qp)
		// Drivers may round the inline size up; post inline only what
		// was asked for.
		e.inline = min(e.inline, int(gotInline))
		if rc := C.rr_qp_to_init(qp, C.uint8_t(cfg.Port), accessAll); rc != 0 {
			return nil, rcErr("ibv_modify_qp(INIT)", cfg.Device, rc)
		}
		e.psns = append(e.psns, randomPSN())
	}
	e.recvLeft = make([]uint64, cfg.QPs)
	return e, nil
}

// hugePage is the default huge page size on x86-64 and arm64.
const hugePage = 2 << 20

// bufferBytes rounds n up to whole pages.
func bufferBytes(n int) int {
	page := unix.Getpagesize()
	return (n + page - 1) / page * page
}

func randomPSN() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) & 0xffffff
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
		Addr:      uint64(uintptr(unsafe.Pointer(&e.mem[0]))) + uint64(e.slot),
		Stride:    uint64(2 * e.slot),
		ActiveMTU: e.port.ActiveMTU,
		MaxInline: e.inline,
	}
}

// SendArea is QP i's send area: where its writes and sends leave from,
// and where reads and atomics return their data... for atomics, the
// fetched word. Valid until Close.
func (e *Endpoint) SendArea(i int) []byte {
	off := 2 * e.slot * i
	return e.mem[off : off+e.cfg.MaxMessage]
}

// RecvArea is QP i's receive area: where the peer's writes and sends
// land, and what the peer's reads and atomics target.
func (e *Endpoint) RecvArea(i int) []byte {
	off := 2*e.slot*i + e.slot
	return e.mem[off : off+e.cfg.MaxMessage]
}

// Connect moves every QP through RTR to RTS towards the peer's QP of the
// same index. The path MTU is the smaller of both ends' active MTUs
// unless attrs names one.
func (e *Endpoint) Connect(remote EndpointInfo, attrs QPAttrs) error {
	if err := attrs.Validate(); err != nil {
		return err
	}
	a := attrs.merged()
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
		// RoCE always routes by GID; InfiniBand only needs the GRH across subnets.
		if e.port.LinkLayer == "Ethernet" {
			c.is_global = 1
			gid := net.IP(remote.GID).To16()
			if gid == nil {
				return fmt.Errorf("rdma: the peer %s sent no GID", remote.Device)
			}
			for j := range 16 {
				c.dgid[j] = C.uint8_t(gid[j])
			}
		}
		if rc := C.rr_qp_to_rtr(qp, &c); rc != 0 {
			return rcErr("ibv_modify_qp(RTR)", e.cfg.Device, rc)
		}
		if rc := C.rr_qp_to_rts(qp, &c); rc != 0 {
			return rcErr("ibv_modify_qp(RTS)", e.cfg.Device, rc)
		}
	}
	e.attrs = a
	e.ready = true
	return nil
}

// Attrs returns the QP attributes Connect really set, path MTU included.
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
	for _, qp := range e.qps {
		errs = append(errs, rcErr("ibv_destroy_qp", e.cfg.Device, C.ibv_destroy_qp(qp)))
	}
	e.qps = nil
	for _, cq := range e.cqs {
		errs = append(errs, rcErr("ibv_destroy_cq", e.cfg.Device, C.ibv_destroy_cq(cq)))
	}
	e.cqs = nil
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
	return errors.Join(errs...)
}

// Pair is two endpoints in one process connected to each other: on two
// devices, or twice on one device.
type Pair struct {
	Requester, Responder *Endpoint
}

// NewLoopbackPair creates both endpoints and connects them.
func NewLoopbackPair(requester, responder EndpointConfig, attrs QPAttrs) (*Pair, error) {
	a, err := NewEndpoint(requester)
	if err != nil {
		return nil, err
	}
	b, err := NewEndpoint(responder)
	if err != nil {
		a.Close()
		return nil, err
	}
	p := &Pair{Requester: a, Responder: b}
	if err := a.Connect(b.Info(), attrs); err != nil {
		p.Close()
		return nil, err
	}
	if err := b.Connect(a.Info(), attrs); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close closes both endpoints.
func (p *Pair) Close() error {
	return errors.Join(p.Requester.Close(), p.Responder.Close())
}

// Run runs spec between the pair's endpoints, each side in its own
// threads as if the other were remote. ctx ends the run early (the result
// then is an error).
func (p *Pair) Run(ctx context.Context, spec TestSpec) (*Result, error) {
	spec, err := Normalize(spec)
	if err != nil {
		return nil, err
	}
	reqRole, respRole := Roles(spec)
	resp, err := p.Responder.Prepare(spec, 1, respRole, p.Requester.Info())
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	req, err := p.Requester.Prepare(spec, 0, reqRole, p.Responder.Info())
	if err != nil {
		return nil, err
	}
	defer req.Close()
	resp.Start()
	req.Start()
	Link(ctx, req, resp)
	reqRes, reqErr := req.Result()
	respRes, respErr := resp.Result()
	if err := FirstError(reqErr, respErr); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rdma: run stopped: %w", ctx.Err())
		}
		return nil, err
	}
	spec = req.spec
	spec.QP = p.Requester.Attrs()
	return Assemble(spec, p.Requester.Info(), p.Responder.Info(), reqRes, respRes), nil
}

// SideRun is one side of a test, prepared on its endpoint: its workers,
// their QP views and histograms in C memory, and the counters and CPU time
// taken around the run.
type SideRun struct {
	e      *Endpoint
	spec   TestSpec
	side   int // 0 requester, 1 responder
	role   Role
	c      *cRun
	ws     []*C.struct_rr_worker
	qio    []*C.struct_rr_qp_io
	before portstats.Counters
	after  portstats.Counters
	span   portstats.CPUSpan
	cpu    portstats.CPUUsage
	done   chan struct{}
	// started is set by Start: a side prepared but never started (its
	// peer went away between Prepare and Start) has no workers to wait
	// for, and done would never close.
	started atomic.Bool
	rc      C.int
	ended   sync.Once
	// ownDone is closed when every sender of this side has finished; the
	// C side wakes it through an eventfd, so nothing polls.
	ownDone chan struct{}
	notify  *os.File
}

// watchOwnDone creates the eventfd the workers write when their sending
// is done, and a goroutine that turns it into the ownDone channel.
func (s *SideRun) watchOwnDone() error {
	s.ownDone = make(chan struct{})
	s.c.r.notify_fd = -1
	if s.c.r.nsenders == 0 {
		return nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("rdma: eventfd: %w", err)
	}
	s.notify = os.NewFile(uintptr(fd), "rdmarun-own-done")
	s.c.r.notify_fd = C.int(fd)
	go func() {
		var b [8]byte
		if _, err := s.notify.Read(b[:]); err == nil {
			close(s.ownDone)
		}
	}()
	return nil
}

// OwnDoneC is closed when every sender of this side has finished. It is
// never closed for a side without senders.
func (s *SideRun) OwnDoneC() <-chan struct{} { return s.ownDone }

// Prepare lays out one side of spec on the endpoint, fills its buffers and
// posts its receives: after Prepare the peer may start sending. side is 0
// for the requester, 1 for the responder.
func (e *Endpoint) Prepare(spec TestSpec, side int, role Role, peer EndpointInfo) (*SideRun, error) {
	spec, err := Normalize(spec)
	if err != nil {
		return nil, err
	}
	if err := e.fits(spec); err != nil {
		return nil, err
	}
	if len(peer.QPNs) != spec.QPs {
		return nil, fmt.Errorf("rdma: the peer has %d QPs, the test wants %d", len(peer.QPNs), spec.QPs)
	}
	s := &SideRun{e: e, spec: spec, side: side, role: role, done: make(chan struct{})}
	fillBuffers(spec, e, side)
	if s.c, err = s.build(peer); err != nil {
		return nil, err
	}
	if err := s.watchOwnDone(); err != nil {
		s.c.free()
		return nil, err
	}
	if C.rr_prepare(s.c.r) != 0 {
		err := s.error()
		s.c.free()
		return nil, err
	}
	// Counters are best effort: a driver may lack them, and the test
	// should not fail for it.
	s.before, _ = portstats.Snapshot("", e.cfg.Device, e.cfg.Port)
	return s, nil
}

// Start runs the workers in the background.
func (s *SideRun) Start() {
	if s.started.Swap(true) {
		return
	}
	s.span = portstats.StartCPU()
	go func() {
		s.rc = C.rr_run_workers(s.c.r)
		close(s.done)
	}()
}

// HasWorkers reports whether this side runs threads of its own; a
// passive side (the NIC answers alone) does not.
func (s *SideRun) HasWorkers() bool { return len(s.ws) > 0 }

// Done is closed when the workers have returned.
func (s *SideRun) Done() <-chan struct{} { return s.done }

// Finished reports whether the workers have returned.
func (s *SideRun) Finished() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Failed reports whether a finished side failed.
func (s *SideRun) Failed() bool { return s.Finished() && s.rc != 0 }

// OwnDone reports whether every sender of this side has finished.
func (s *SideRun) OwnDone() bool { return C.rr_own_done(s.c.r) != 0 }

// PeerDone tells this side that every sender of the other side has
// finished: responders stop waiting for more, receivers drain and stop.
func (s *SideRun) PeerDone() { C.rr_peer_done(s.c.r) }

// Stop asks the workers to end now; the side then fails with ErrStopped
// unless it already failed otherwise.
func (s *SideRun) Stop() { C.rr_request_stop(s.c.r) }

// Result waits for the workers and returns this side's share, or why it
// failed.
//
// The counters and CPU time are read at the first call, not when the
// workers return: a passive side (the NIC answers reads and one-way
// writes alone) has no workers, and its share lasts until the peer is
// done, which is when callers ask.
func (s *SideRun) Result() (*SideResult, error) {
	if !s.started.Load() {
		return nil, errNotStarted
	}
	<-s.done
	s.ended.Do(func() {
		s.cpu = s.span.Stop()
		s.after, _ = portstats.Snapshot("", s.e.cfg.Device, s.e.cfg.Port)
		// What the workers leave posted stays posted for the next run.
		for i, q := range s.qio {
			s.e.recvLeft[i] = uint64(q.recv_posted - q.received)
		}
	})
	if s.rc != 0 {
		return nil, s.error()
	}
	r := &SideResult{
		Device:   s.e.cfg.Device,
		Role:     s.role,
		CPU:      CPUUse{UserNs: s.cpu.User.Nanoseconds(), SysNs: s.cpu.Sys.Nanoseconds()},
		Counters: portstats.Delta(s.before, s.after).NonZero(),
	}
	r.lat.min = math.MaxUint64
	for _, q := range s.qio {
		r.QPs = append(r.QPs, QPCounts{
			Posted: uint64(q.posted), Completed: uint64(q.completed), Received: uint64(q.received),
			FirstPost: int64(q.t_first_post), LastComp: int64(q.t_last_comp),
			FirstRecv: int64(q.t_first_recv), LastRecv: int64(q.t_last_recv),
		})
	}
	for _, w := range s.ws {
		r.Events += uint64(w.events)
		if r.Begin == 0 || (w.t_begin != 0 && int64(w.t_begin) < r.Begin) {
			r.Begin = int64(w.t_begin)
		}
		r.End = max(r.End, int64(w.t_end))
		if w.hist == nil {
			continue
		}
		if r.hist == nil {
			r.hist = make([]uint64, C.RR_HIST_BUCKETS)
		}
		for i, c := range unsafe.Slice((*uint64)(unsafe.Pointer(w.hist)), C.RR_HIST_BUCKETS) {
			r.hist[i] += c
		}
		r.lat.n += uint64(w.n)
		r.lat.sum += uint64(w.sum)
		r.lat.sumsq += float64(w.sumsq)
		r.lat.min = min(r.lat.min, uint64(w.min))
		r.lat.max = max(r.lat.max, uint64(w.max))
	}
	if s.spec.Validate {
		if err := checkBuffers(s.spec, s.e, s.side, s.role); err != nil {
			return r, err
		}
	}
	return r, nil
}

// Close frees the side's C memory; it waits for the workers first.
func (s *SideRun) Close() {
	if s.c == nil {
		return
	}
	if s.started.Load() {
		s.Stop()
		<-s.done
	}
	if s.notify != nil {
		s.notify.Close()
	}
	s.c.free()
	s.c = nil
}

// errNotStarted is Result's answer for a side that never ran.
var errNotStarted = errors.New("rdma: the test side was prepared but never started")

// fits reports why the endpoint cannot run spec, or nil.
func (e *Endpoint) fits(spec TestSpec) error {
	switch {
	case !e.ready:
		return fmt.Errorf("rdma: %s is not connected", e.cfg.Device)
	case len(e.qps) != spec.QPs:
		return fmt.Errorf("rdma: %s has %d QPs, the test wants %d", e.cfg.Device, len(e.qps), spec.QPs)
	case e.cfg.QPType != spec.QPType:
		return fmt.Errorf("rdma: %s has %s QPs, the test wants %s", e.cfg.Device, e.cfg.QPType, spec.QPType)
	case e.cfg.MaxMessage < spec.Size:
		return fmt.Errorf("rdma: %s's buffers hold %d bytes, the test sends %d", e.cfg.Device, e.cfg.MaxMessage, spec.Size)
	case spec.Mode == ModeEvent && len(e.chans) < spec.Threads:
		return fmt.Errorf("rdma: %s has %d completion channels, event mode with %d threads needs one each", e.cfg.Device, len(e.chans), spec.Threads)
	case e.cfg.SQDepth < spec.TxDepth || e.cfg.RQDepth < spec.RxDepth:
		return fmt.Errorf("rdma: %s's queues (%d send, %d receive) are smaller than tx_depth %d, rx_depth %d", e.cfg.Device, e.cfg.SQDepth, e.cfg.RQDepth, spec.TxDepth, spec.RxDepth)
	}
	return nil
}

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
	r.op = C.int(spec.Op)
	r.measure = C.int(spec.Measure)
	r.size = C.uint32_t(spec.Size)
	if spec.Inline > 0 {
		r.max_inline = C.uint32_t(min(e.inline, peer.MaxInline, spec.Inline))
	}
	r.tx_depth = C.uint32_t(spec.TxDepth)
	r.rx_depth = C.uint32_t(spec.RxDepth)
	r.recv_len = C.uint32_t(e.cfg.MaxMessage)
	r.cq_mod = C.uint32_t(spec.CQModeration)
	r.post_list = C.uint32_t(spec.PostList)
	r.stall_ns = C.int64_t(time.Duration(spec.StallTimeout).Nanoseconds())
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
			if p, err = c.calloc(C.RR_HIST_BUCKETS, 8); err != nil {
				return nil, err
			}
			w.hist = (*C.uint64_t)(p)
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
			q.sbuf = (*C.uint8_t)(unsafe.Pointer(&e.SendArea(i)[0]))
			q.rbuf = (*C.uint8_t)(unsafe.Pointer(&e.RecvArea(i)[0]))
			q.lkey = e.mr.lkey
			q.raddr = C.uint64_t(peer.Addr + uint64(i)*peer.Stride)
			q.rkey = C.uint32_t(peer.RKey)
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
		s.ws = append(s.ws, w)
	}
	for _, q := range byQP {
		if q != nil {
			s.qio = append(s.qio, q)
		}
	}
	return c, nil
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
		return &StallError{Waited: time.Duration(s.spec.StallTimeout), Waiting: what, Device: dev, Iteration: uint64(w.fail_iter)}
	}
	return fmt.Errorf("rdma: run failed with unknown code %d", int(w.fail))
}
