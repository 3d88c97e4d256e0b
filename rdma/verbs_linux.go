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
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
	"unsafe"

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
	names, err := sysfsDeviceNames(SysfsRoot)
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
	dir := filepath.Join(SysfsRoot, name)
	d, err := readSysfsDevice(dir, false)
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
		return readSysfsDevice(dir, true)
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
	if _, err := os.Stat(filepath.Join(SysfsRoot, name)); err != nil {
		names, _ := sysfsDeviceNames(SysfsRoot)
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

// Endpoint owns one RC QP and what it needs: a device context, a PD, a
// registered buffer off the Go heap, and a CQ. Close frees them in the
// order the verbs API requires.
type Endpoint struct {
	cfg      EndpointConfig
	port     Port
	gid      GID
	psn      uint32
	inline   int
	ctx      *C.struct_ibv_context
	pd       *C.struct_ibv_pd
	cq       *C.struct_ibv_cq
	qp       *C.struct_ibv_qp
	mr       *C.struct_ibv_mr
	mem      []byte // mmap'ed: registered memory must not move, so it is never Go heap
	attrs    QPAttrs
	closed   bool
	rtsReady bool
}

const accessAll = C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_REMOTE_WRITE | C.IBV_ACCESS_REMOTE_READ | C.IBV_ACCESS_REMOTE_ATOMIC

// NewEndpoint opens the device and creates the PD, buffer, MR, CQ and an
// RC QP in INIT. On error everything created so far is freed.
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
		return nil, fmt.Errorf("rdma: %s port %d is %s, not ACTIVE (check the link and `rdma link show`)", cfg.Device, cfg.Port, port.State)
	}
	gid, err := port.SelectGID(cfg.GIDIndex)
	if err != nil {
		return nil, fmt.Errorf("rdma: %s: %w", cfg.Device, err)
	}
	e := &Endpoint{cfg: cfg, port: *port, gid: gid, psn: randomPSN()}
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
	e.mem, err = unix.Mmap(-1, 0, bufferBytes(cfg.MaxMessage), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		e.mem = nil
		return nil, fmt.Errorf("rdma: mmap of %d bytes: %w", bufferBytes(cfg.MaxMessage), err)
	}
	if e.mr, err = C.rr_reg_mr(e.pd, unsafe.Pointer(&e.mem[0]), C.size_t(len(e.mem)), accessAll); e.mr == nil {
		return nil, verbsErr("ibv_reg_mr", cfg.Device, err)
	}
	cqDepth := 2*cfg.SQDepth + 16
	if e.cq, err = C.ibv_create_cq(e.ctx, C.int(cqDepth), nil, nil, 0); e.cq == nil {
		return nil, verbsErr("ibv_create_cq", cfg.Device, err)
	}
	var gotInline C.uint32_t
	if e.qp, err = C.rr_create_rc_qp(e.pd, e.cq, C.uint32_t(cfg.SQDepth), 16, C.uint32_t(cfg.MaxInline), &gotInline); e.qp == nil {
		return nil, verbsErr("ibv_create_qp", cfg.Device, err)
	}
	// Drivers may round the inline size up; post inline only what was asked for.
	e.inline = min(cfg.MaxInline, int(gotInline))
	if rc := C.rr_qp_to_init(e.qp, C.uint8_t(cfg.Port), accessAll); rc != 0 {
		return nil, rcErr("ibv_modify_qp(INIT)", cfg.Device, rc)
	}
	return e, nil
}

// bufferBytes is the size of the registered buffer: a send area and a
// receive area, each maxMessage long, rounded up to whole pages.
func bufferBytes(maxMessage int) int {
	page := unix.Getpagesize()
	return (2*maxMessage + page - 1) / page * page
}

func randomPSN() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) & 0xffffff
}

// Info describes the endpoint to its peer. Addr and RKey point at the
// receive area.
func (e *Endpoint) Info() EndpointInfo {
	return EndpointInfo{
		Device:    e.cfg.Device,
		Port:      e.cfg.Port,
		QPN:       uint32(e.qp.qp_num),
		PSN:       e.psn,
		LID:       e.port.LID,
		GID:       e.gid.GID,
		GIDIndex:  e.gid.Index,
		GIDType:   e.gid.Type,
		LinkLayer: e.port.LinkLayer,
		RKey:      uint32(e.mr.rkey),
		Addr:      uint64(uintptr(unsafe.Pointer(&e.mem[0]))) + uint64(e.cfg.MaxMessage),
		ActiveMTU: e.port.ActiveMTU,
		MaxInline: e.inline,
	}
}

// SendArea and RecvArea expose the registered buffer's halves. They are
// valid until Close.
func (e *Endpoint) SendArea() []byte { return e.mem[:e.cfg.MaxMessage] }

// RecvArea is where the peer's writes land.
func (e *Endpoint) RecvArea() []byte { return e.mem[e.cfg.MaxMessage : 2*e.cfg.MaxMessage] }

// Connect moves the QP through RTR to RTS towards remote. The path MTU is
// the smaller of both ends' active MTUs unless attrs names one.
func (e *Endpoint) Connect(remote EndpointInfo, attrs QPAttrs) error {
	if err := attrs.Validate(); err != nil {
		return err
	}
	a := attrs.merged()
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
	c := C.struct_rr_conn{
		dest_qpn:           C.uint32_t(remote.QPN),
		rq_psn:             C.uint32_t(remote.PSN),
		sq_psn:             C.uint32_t(e.psn),
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
	// RoCE always routes by GID; InfiniBand only needs the GRH across subnets.
	if e.port.LinkLayer == "Ethernet" {
		c.is_global = 1
		gid := net.IP(remote.GID).To16()
		if gid == nil {
			return fmt.Errorf("rdma: the peer %s sent no GID", remote.Device)
		}
		for i := range 16 {
			c.dgid[i] = C.uint8_t(gid[i])
		}
	}
	// The RTR transition takes the peer's PSN as our receive PSN.
	if rc := C.rr_qp_to_rtr(e.qp, &c); rc != 0 {
		return rcErr("ibv_modify_qp(RTR)", e.cfg.Device, rc)
	}
	if rc := C.rr_qp_to_rts(e.qp, &c); rc != 0 {
		return rcErr("ibv_modify_qp(RTS)", e.cfg.Device, rc)
	}
	e.attrs = a
	e.rtsReady = true
	return nil
}

// Fail moves the QP to the error state; tests use it to make a peer stop
// answering.
func (e *Endpoint) Fail() error {
	return rcErr("ibv_modify_qp(ERR)", e.cfg.Device, C.rr_qp_to_err(e.qp))
}

// Close frees the QP, CQ, MR, buffer, PD and context, in that order. It
// is safe to call more than once, and on a partly built endpoint.
func (e *Endpoint) Close() error {
	if e == nil || e.closed {
		return nil
	}
	e.closed = true
	var errs []error
	if e.qp != nil {
		errs = append(errs, rcErr("ibv_destroy_qp", e.cfg.Device, C.ibv_destroy_qp(e.qp)))
		e.qp = nil
	}
	if e.cq != nil {
		errs = append(errs, rcErr("ibv_destroy_cq", e.cfg.Device, C.ibv_destroy_cq(e.cq)))
		e.cq = nil
	}
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

// WriteLatency runs an RDMA WRITE ping-pong: the requester writes Size
// bytes into the responder's receive area, the responder sees the last
// byte change and writes back, and the requester times the round trip.
// The whole run is one call into C.
func (p *Pair) WriteLatency(opt LatencyOptions) (*LatencyResult, error) {
	a, b := p.Requester, p.Responder
	if !a.rtsReady || !b.rtsReady {
		return nil, errors.New("rdma: pair is not connected")
	}
	if err := opt.Validate(min(a.cfg.MaxMessage, b.cfg.MaxMessage)); err != nil {
		return nil, err
	}
	if opt.StallTimeout == 0 {
		opt.StallTimeout = 5 * time.Second
	}
	if opt.Threads == 0 {
		opt.Threads = 2
	}
	// The last byte carries the sequence number; zero it so the first
	// arrival cannot be mistaken for a stale one.
	a.RecvArea()[opt.Size-1] = 0
	b.RecvArea()[opt.Size-1] = 0
	ai, bi := a.Info(), b.Info()
	inline := min(a.inline, b.inline)
	args := C.struct_rr_lat_args{
		size:       C.uint32_t(opt.Size),
		max_inline: C.uint32_t(inline),
		sq_slots:   C.uint32_t(min(a.cfg.SQDepth, b.cfg.SQDepth)),
		warmup:     C.uint64_t(opt.Warmup),
		iters:      C.uint64_t(opt.Iterations),
		stall_ns:   C.int64_t(opt.StallTimeout.Nanoseconds()),
	}
	if opt.Threads == 2 {
		args.responder_thread = 1
	}
	args.qp[0], args.qp[1] = a.qp, b.qp
	args.cq[0], args.cq[1] = a.cq, b.cq
	args.send_buf[0] = (*C.uint8_t)(unsafe.Pointer(&a.SendArea()[0]))
	args.send_buf[1] = (*C.uint8_t)(unsafe.Pointer(&b.SendArea()[0]))
	args.recv_buf[0] = (*C.uint8_t)(unsafe.Pointer(&a.RecvArea()[0]))
	args.recv_buf[1] = (*C.uint8_t)(unsafe.Pointer(&b.RecvArea()[0]))
	args.lkey[0], args.lkey[1] = a.mr.lkey, b.mr.lkey
	args.raddr[0], args.rkey[0] = C.uint64_t(bi.Addr), C.uint32_t(bi.RKey)
	args.raddr[1], args.rkey[1] = C.uint64_t(ai.Addr), C.uint32_t(ai.RKey)

	samples := make([]uint64, opt.Iterations)
	rc := C.rr_write_lat(&args, (*C.uint64_t)(unsafe.Pointer(&samples[0])))
	if rc != 0 {
		return nil, p.loopError(&args, opt)
	}
	rtt := Summarize(samples)
	return &LatencyResult{
		Op:         "write",
		Size:       opt.Size,
		Iterations: opt.Iterations,
		Warmup:     opt.Warmup,
		Inline:     opt.Size <= inline,
		Threads:    opt.Threads,
		Samples:    samples,
		RTT:        rtt,
		OneWay:     rtt.Half(),
		Elapsed:    time.Duration(args.elapsed_ns),
		QP:         a.attrs,
		Requester:  ai,
		Responder:  bi,
	}, nil
}

func (p *Pair) loopError(a *C.struct_rr_lat_args, opt LatencyOptions) error {
	side := p.Requester
	if a.fail_side == 1 {
		side = p.Responder
	}
	switch a.fail {
	case C.RR_FAIL_POST:
		return &VerbsError{Op: "ibv_post_send", Device: side.cfg.Device, Errno: syscall.Errno(a.err_errno)}
	case C.RR_FAIL_POLL:
		return &VerbsError{Op: "ibv_poll_cq", Device: side.cfg.Device, Errno: syscall.Errno(a.err_errno)}
	case C.RR_FAIL_WC:
		st := WCStatus(a.wc_status)
		return &CompletionError{
			Status:      st,
			Description: C.GoString(C.ibv_wc_status_str(uint32(a.wc_status))),
			VendorErr:   uint32(a.vendor_err),
			Opcode:      int(a.wc_opcode),
			QPN:         uint32(a.wc_qpn),
			Device:      side.cfg.Device,
			Iteration:   uint64(a.fail_iter),
		}
	case C.RR_FAIL_THREAD:
		return fmt.Errorf("rdma: starting the responder thread: %w", syscall.Errno(a.err_errno))
	case C.RR_FAIL_STALL:
		what := "the peer's write to arrive"
		if a.stall_waiting == 1 {
			what = "send completions"
		}
		return &StallError{Waited: opt.StallTimeout, Waiting: what, Device: side.cfg.Device, Iteration: uint64(a.fail_iter)}
	}
	return fmt.Errorf("rdma: latency loop failed with unknown code %d", int(a.fail))
}
