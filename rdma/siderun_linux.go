//go:build linux && cgo && !nordma

package rdma

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmarun/rdmarun/portstats"
	"golang.org/x/sys/unix"
)

// SideRun is one side of a test, prepared on its endpoint: its workers,
// their QP views and histograms in C memory, and the counters and CPU time
// taken around the run.
type SideRun struct {
	e      *Endpoint
	spec   Test
	side   int // 0 requester, 1 responder
	role   Role
	c      *cRun
	ws     []*C.struct_rr_worker
	qio    []*C.struct_rr_qp_io
	before portstats.Counters
	after  portstats.Counters
	span   portstats.CPUSpan
	cpu    portstats.CPUUsage
	exited chan struct{}
	// started is set by Start: a side prepared but never started (its
	// peer went away between Prepare and Start) has no workers to wait
	// for, and exited would never close.
	started atomic.Bool
	rc      C.int
	// endedAt is when the workers were seen done; the after-snapshot of
	// the counters must not be a reading from before it.
	endedAt time.Time
	ended   sync.Once
	// hist is the latency histogram's non-empty buckets, taken out of
	// the endpoint's buffers once the workers are done.
	hist []bucketCount
	// sendersFinished is closed when every sender of this side has
	// finished; the C side wakes it through an eventfd, so nothing polls.
	sendersFinished chan struct{}
	notify          *os.File
	// srqLimit counts the shared receive queue's limit events of the run.
	srqLimit int
}

// watchSenders creates the eventfd the workers write when their sending
// is done, and a goroutine that turns it into the sendersFinished channel.
func (s *SideRun) watchSenders() error {
	s.sendersFinished = make(chan struct{})
	s.c.r.notify_fd = -1
	// A latency sender is done only as its worker exits, which Exited
	// already tells: an eventfd, its poller registration and a goroutine
	// per run would say nothing more, and a prober pays for them on every
	// probe.
	if s.c.r.nsenders == 0 || s.spec.Measure != MeasureBandwidth {
		return nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("rdma: eventfd: %w", err)
	}
	s.notify = os.NewFile(uintptr(fd), "rdmarun-senders-finished")
	s.c.r.notify_fd = C.int(fd)
	go func() {
		var b [8]byte
		if _, err := s.notify.Read(b[:]); err == nil {
			close(s.sendersFinished)
		}
	}()
	return nil
}

// Prepare lays out one side of spec on the endpoint, fills its buffers and
// posts its receives: after Prepare the peer may start sending. side is 0
// for the requester, 1 for the responder.
func (e *Endpoint) Prepare(spec Test, side int, role Role, peer EndpointInfo) (*SideRun, error) {
	err := spec.Ready()
	if err != nil {
		return nil, err
	}
	if err := e.fits(spec); err != nil {
		return nil, err
	}
	if err := e.Capable(spec); err != nil {
		return nil, err
	}
	if len(peer.QPNs) != spec.QPs {
		return nil, fmt.Errorf("rdma: the peer has %d QPs, the test wants %d", len(peer.QPNs), spec.QPs)
	}
	// Before the run's own resources: nothing of the run to undo if it fails.
	if err := e.openRunner(); err != nil {
		return nil, err
	}
	s := &SideRun{e: e, spec: spec, side: side, role: role, exited: make(chan struct{})}
	fillBuffers(spec, e, side)
	if s.c, err = s.build(peer); err != nil {
		return nil, err
	}
	if err := s.watchSenders(); err != nil {
		s.c.free()
		return nil, err
	}
	if spec.Mode == ModeEvent && s.role != 0 {
		fd, err := e.wakeFD()
		if err != nil {
			s.closeFDs()
			s.c.free()
			return nil, err
		}
		s.c.r.wake_fd = C.int(fd)
	}
	if C.rr_prepare(s.c.r) != 0 {
		err := s.error()
		s.closeFDs()
		s.c.free()
		return nil, err
	}
	// Counters are best effort: a driver may lack them, and the test
	// should not fail for it.
	if !e.cfg.SkipPortCounters {
		s.before, _ = e.counters.Snapshot()
	}
	return s, nil
}

// Start runs the workers in the background, on the endpoint's runner
// thread: while they run, no goroutine sits in a cgo call (rr_runner), and
// exited closes when the runner writes its done eventfd.
func (s *SideRun) Start() {
	if s.started.Swap(true) {
		return
	}
	s.span = portstats.StartCPU()
	C.rr_runner_submit(s.e.runner, s.c.r)
	go func() {
		var b [8]byte
		if _, err := s.e.runDone.Read(b[:]); err != nil {
			// Only a closed file fails here, and Endpoint.Close
			// comes after the runs: going on could free the run's
			// memory under the runner.
			panic(fmt.Sprintf("rdma: the runner's done eventfd: %v", err))
		}
		s.rc = s.c.r.done_rc
		s.endedAt = time.Now()
		close(s.exited)
	}()
}

// The two sides of a test coordinate through the methods below, over a
// control channel (peer.relay) or in one process (link): each side learns
// from the other when its senders are done and whether it failed.

// SendersFinished is closed when every sender of this side has finished
// its last operation. The caller passes this on to the other side at
// once (see MarkPeerFinished), since that side's receivers and
// responders cannot otherwise know when to stop. It is never closed for
// a side without senders, nor for a latency side, whose senders finish
// only as its workers exit: Exited tells that.
func (s *SideRun) SendersFinished() <-chan struct{} { return s.sendersFinished }

// MarkPeerFinished tells this side that every sender of the other side
// has finished, or that the other side has exited: responders stop
// waiting for more requests, receivers drain what is in flight and stop.
// Calling it again changes nothing.
func (s *SideRun) MarkPeerFinished() { C.rr_peer_done(s.c.r) }

// Exited is closed when the workers have returned, successfully or not;
// Result then no longer blocks. It is a channel so that callers can wait
// for it together with the other side's news instead of blocking in
// Result.
func (s *SideRun) Exited() <-chan struct{} { return s.exited }

// Failed reports whether the workers have exited with a failure (false
// while they run), so that on Exited a caller can stop the other side
// at once instead of letting it wait out its stall deadline.
func (s *SideRun) Failed() bool {
	select {
	case <-s.exited:
		return s.rc != 0
	default:
		return false
	}
}

// HasWorkers reports whether this side runs threads of its own. A
// passive side (the NIC answers reads, atomics and one-way writes alone)
// does not: it exits at once, and its Exited says nothing about the test
// being over.
func (s *SideRun) HasWorkers() bool { return len(s.ws) > 0 }

// Stop asks the workers to end now and returns without waiting for them
// (Exited tells when they have); the side then fails with ErrStopped
// unless it already failed otherwise. Callers stop a side when the other
// side failed or went away, or when they give up on the test.
func (s *SideRun) Stop() { C.rr_request_stop(s.c.r) }

// withLoss adds to a completion error or a stall what the port's
// counters said about lost packets during the run, so that a lossy path
// is not reported as a dead peer.
func (s *SideRun) withLoss(err error) error {
	if s.e.cfg.SkipPortCounters {
		return err
	}
	loss := pathLoss(s.e.cfg.Device, portstats.Delta(s.before, s.after), s.spec.QP.RetryCnt)
	var ce *CompletionError
	var se *StallError
	switch {
	case loss == nil:
	case errors.As(err, &ce):
		ce.Loss = loss
	case errors.As(err, &se):
		se.Loss = loss
	}
	return err
}

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
	<-s.exited
	s.ended.Do(func() {
		s.cpu = s.span.Stop()
		for t, w := range s.ws {
			if w.hist != nil {
				s.hist = mergeBuckets(s.hist, s.e.takeHistogram(t, uint64(w.min), uint64(w.max)))
			}
		}
		if !s.e.cfg.SkipPortCounters {
			s.after, _ = s.e.counters.SnapshotAfter(s.endedAt)
		}
		// What the workers leave posted stays posted for the next run.
		for i, q := range s.qio {
			s.e.recvLeft[i] = uint64(q.recv_posted - q.received)
		}
		if s.e.srq != nil {
			left := s.e.srqLeft + uint64(s.c.r.srq_prefilled)
			for _, w := range s.ws {
				left += uint64(w.srq_posted)
			}
			for _, q := range s.qio {
				left -= min(left, uint64(q.received))
			}
			s.e.srqLeft = left
			// The device said so if the queue ran low (rr_prepare
			// armed its limit); best effort, like the counters.
			var n C.uint32_t
			C.rr_drain_async(s.e.ctx, &n)
			s.srqLimit = int(n)
		}
	})
	if s.rc != 0 {
		return nil, s.withLoss(s.error())
	}
	r := &SideResult{
		Device:          s.e.cfg.Device,
		Role:            s.role,
		RegisteredBytes: s.e.RegisteredBytes(),
		SRQLimitReached: s.srqLimit,
		CPU:             CPUUse{UserNs: s.cpu.User.Nanoseconds(), SysNs: s.cpu.Sys.Nanoseconds()},
		Counters:        portstats.Delta(s.before, s.after).NonZero(),
	}
	r.lat.min = math.MaxUint64
	r.hist = s.hist
	for _, q := range s.qio {
		r.QPs = append(r.QPs, QPCounts{
			Posted: uint64(q.posted), Completed: uint64(q.completed), Received: uint64(q.received),
			FirstPost: int64(q.t_first_post), LastComp: int64(q.t_last_comp),
			FirstRecv: int64(q.t_first_recv), LastRecv: int64(q.t_last_recv),
			TimedOut: uint64(q.timed_out), Late: uint64(q.late),
		})
	}
	for _, w := range s.ws {
		r.Silent = r.Silent || w.silent != 0
		r.Events += uint64(w.events)
		if r.Begin == 0 || (w.t_begin != 0 && int64(w.t_begin) < r.Begin) {
			r.Begin = int64(w.t_begin)
		}
		r.End = max(r.End, int64(w.t_end))
		if w.hist == nil {
			continue
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
		<-s.exited
	}
	s.closeFDs()
	s.c.free()
	s.c = nil
}

// closeFDs closes the senders' eventfd; its watcher goroutine then ends.
func (s *SideRun) closeFDs() {
	if s.notify != nil {
		s.notify.Close()
		s.notify = nil
	}
}

// openRunner starts the endpoint's runner thread and its done eventfd,
// at the first run prepared: an endpoint that never runs has no thread.
func (e *Endpoint) openRunner() error {
	if e.runner != nil {
		return nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("rdma: eventfd: %w", err)
	}
	var errno C.int
	t := C.rr_runner_open(C.int(fd), &errno)
	if t == nil {
		unix.Close(fd)
		return fmt.Errorf("rdma: starting the runner thread: %w", unix.Errno(errno))
	}
	e.runner, e.runDone = t, os.NewFile(uintptr(fd), "rdmarun-runner-done")
	return nil
}

// wakeFD returns the endpoint's wake eventfd, made on first use, emptied
// of what the last run wrote (its stop or peer_done), so that a new run
// starts with nothing to wake for.
func (e *Endpoint) wakeFD() (int, error) {
	if e.wake < 0 {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			return -1, fmt.Errorf("rdma: eventfd: %w", err)
		}
		e.wake = fd
		return fd, nil
	}
	var b [8]byte
	if _, err := unix.Read(e.wake, b[:]); err != nil && err != unix.EAGAIN {
		return -1, fmt.Errorf("rdma: emptying the wake eventfd: %w", err)
	}
	return e.wake, nil
}

// errNotStarted is Result's answer for a side that never ran.
var errNotStarted = errors.New("rdma: the test side was prepared but never started")

// fits reports why the endpoint cannot run spec, or nil.
func (e *Endpoint) fits(spec Test) error {
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
	case spec.SRQ && len(e.recvCQs) != spec.Threads:
		return fmt.Errorf("rdma: %s has %d shared receive CQs, a test with srq and %d threads needs one each", e.cfg.Device, len(e.recvCQs), spec.Threads)
	case spec.QPType == UD && spec.Size > e.attrs.MTU:
		return fmt.Errorf("rdma: size %d bytes is above the path MTU %d bytes on %s (%s): a UD message is one packet; use a size of at most %d", spec.Size, e.attrs.MTU, e.cfg.Device, e.mtuFrom, e.attrs.MTU)
	case e.cfg.SQDepth < spec.TxDepth || e.cfg.RQDepth < spec.RxDepth:
		return fmt.Errorf("rdma: %s's queues (%d send, %d receive) are smaller than tx_depth %d, rx_depth %d", e.cfg.Device, e.cfg.SQDepth, e.cfg.RQDepth, spec.TxDepth, spec.RxDepth)
	}
	return nil
}
