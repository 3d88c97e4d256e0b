package rdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/rdmarun/rdmarun/portstats"
)

// Role says what one side's workers do in a test. The numbers match enum
// rr_role in shim.h.
type Role int

// The roles; a side may have both, or neither (the NIC answers reads,
// atomics and one-way writes alone).
const (
	RoleSend Role = 1 // posts the operation
	RoleRecv Role = 2 // answers ping-pongs, or keeps receives posted
)

// Roles says what each side does in spec: the requester always sends; the
// responder answers ping-pongs, keeps receives posted, or, in a
// bidirectional run, sends too.
func Roles(spec Test) (requester, responder Role) {
	requester = RoleSend
	switch {
	case spec.Measure == MeasureLatency && spec.Op.PingPong():
		responder = RoleRecv
	case spec.Measure == MeasureBandwidth:
		if spec.Op.UsesReceive() {
			responder = RoleRecv
		}
		if spec.Bidirectional {
			responder |= RoleSend
			if spec.Op.UsesReceive() {
				requester |= RoleRecv
			}
		}
	}
	return requester, responder
}

// QPCounts is what one QP of one side did. Times are that host's
// monotonic clock in nanoseconds: only differences on one side mean
// anything.
type QPCounts struct {
	Posted    uint64 `json:"posted"`
	Completed uint64 `json:"completed"`
	Received  uint64 `json:"received"`
	FirstPost int64  `json:"first_post_ns,omitempty"`
	LastComp  int64  `json:"last_completion_ns,omitempty"`
	FirstRecv int64  `json:"first_recv_ns,omitempty"`
	LastRecv  int64  `json:"last_recv_ns,omitempty"`
}

// SideResult is one side's share of a result. A remote responder sends
// its SideResult back to the client.
type SideResult struct {
	Device   string           `json:"device"`
	Role     Role             `json:"role"`
	QPs      []QPCounts       `json:"qps"`
	Events   uint64           `json:"events,omitempty"`
	Begin    int64            `json:"begin_ns,omitempty"` // measured part, this host's clock
	End      int64            `json:"end_ns,omitempty"`
	CPU      CPUUse           `json:"cpu"`
	Counters portstats.Deltas `json:"counters"`
	// Latency samples stay on the requester's side.
	lat  moments
	hist []uint64
}

// CPUUse is the CPU time the process used while a side ran (all its
// threads: in loopback both sides share one process).
type CPUUse struct {
	UserNs int64 `json:"user_ns"`
	SysNs  int64 `json:"sys_ns"`
}

// SideSummary is what a result says about each side besides the traffic.
type SideSummary struct {
	Device string `json:"device"`
	CPU    CPUUse `json:"cpu"`
	// CPUPerOpNs is the CPU time per round trip (latency) or per message
	// sent and received (bandwidth).
	CPUPerOpNs float64          `json:"cpu_per_op_ns"`
	Counters   portstats.Deltas `json:"counters"`
	Events     uint64           `json:"events,omitempty"`
}

// Assemble puts the two sides' shares together into the result.
func Assemble(spec Test, reqInfo, respInfo EndpointInfo, req, resp *SideResult) *Result {
	res := &Result{Spec: spec, Requester: reqInfo, Responder: respInfo, Events: req.Events + resp.Events}
	if spec.Measure == MeasureLatency {
		h := NewHistogram()
		addBuckets(h, req.hist)
		rtt := summaryOf(req.lat, h)
		res.Latency = &LatencyStats{RTT: rtt, Histogram: h}
		for i, c := range req.hist {
			if c > 0 {
				res.Latency.Buckets = append(res.Latency.Buckets, Bucket{Ns: min(bucketValue(i), histMax), Count: c})
			}
		}
		if spec.Op.OneWay() {
			half := rtt.Half()
			res.Latency.OneWay = &half
		}
		res.Elapsed = time.Duration(req.End - req.Begin)
	} else {
		bw := &BandwidthStats{PerQP: make([][]Direction, spec.QPs)}
		for _, s := range []struct {
			side     *SideResult
			from, to string
		}{{req, reqInfo.Device, respInfo.Device}, {resp, respInfo.Device, reqInfo.Device}} {
			if s.side.Role&RoleSend == 0 {
				continue
			}
			from, to := s.from, s.to
			if spec.Op == OpRead {
				from, to = to, from
			}
			var msgs uint64
			var first, last int64
			for i, q := range s.side.QPs {
				if i < spec.QPs {
					bw.PerQP[i] = append(bw.PerQP[i], newDirection(from, to, q.Completed, spec.Size, q.FirstPost, q.LastComp))
				}
				msgs += q.Completed
				if first == 0 || (q.FirstPost != 0 && q.FirstPost < first) {
					first = q.FirstPost
				}
				last = max(last, q.LastComp)
			}
			d := newDirection(from, to, msgs, spec.Size, first, last)
			bw.Directions = append(bw.Directions, d)
			res.Elapsed = max(res.Elapsed, time.Duration(last-first))
		}
		res.Bandwidth = bw
	}
	ops := func(s *SideResult) uint64 {
		if spec.Measure == MeasureLatency {
			return req.lat.n
		}
		var n uint64
		for _, q := range s.QPs {
			n += q.Completed + q.Received
		}
		return n
	}
	for _, s := range []*SideResult{req, resp} {
		sum := SideSummary{Device: s.Device, CPU: s.CPU, Counters: s.Counters, Events: s.Events}
		if n := ops(s); n > 0 {
			sum.CPUPerOpNs = float64(s.CPU.UserNs+s.CPU.SysNs) / float64(n)
		}
		res.Sides = append(res.Sides, sum)
	}
	return res
}

// pattern fills b with the bytes side (0 requester, 1 responder) sends on
// QP qp in a run with this seed. Both ends compute it, so the receiving
// side can check what arrived without seeing the sender's memory.
func pattern(b []byte, seed uint64, side, qp int) {
	x := seed ^ uint64(side)<<40 ^ uint64(qp)<<20
	for i := 0; i < len(b); i += 8 {
		// splitmix64: cheap, and no two QPs or sides share a stream.
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], z)
		copy(b[i:], w[:])
	}
}

// areas is what validation needs of an endpoint.
type areas interface {
	SendArea(i int) []byte
	RecvArea(i int) []byte
}

// fillBuffers prepares one side's buffers before a run: receive areas
// zeroed (the loops watch their last byte), and with validation the send
// areas, or for reads the receive area the peer reads from, filled with
// the pattern.
func fillBuffers(spec Test, e areas, side int) {
	for i := range spec.QPs {
		s, r := e.SendArea(i)[:spec.Size], e.RecvArea(i)[:spec.Size]
		clear(r)
		clear(s)
		switch {
		case spec.Op.Atomic():
		case spec.Op == OpRead:
			if side == 1 || spec.Bidirectional {
				pattern(r, spec.Seed, side, i)
			}
		case spec.Validate:
			pattern(s, spec.Seed, side, i)
		}
	}
}

// checkBuffers compares what arrived at one side with what the other
// side sent. The last byte of a ping-pong message that carries no
// immediate holds its sequence number and is left out.
func checkBuffers(spec Test, e areas, side int, role Role) error {
	n := spec.Size
	if spec.Measure == MeasureLatency && (spec.Op == OpWrite || spec.Op == OpSend || spec.Op == OpSendImm) {
		n--
	}
	want := make([]byte, spec.Size)
	for i := range spec.QPs {
		got := e.RecvArea(i)
		switch {
		case spec.Op.Atomic():
			if side != 1 || spec.Duration != 0 || spec.Measure != MeasureLatency {
				continue
			}
			// Each op adds one (fetch_add) or moves the word one on
			// (cmp_swap), so it ends at the number of ops.
			if w, ops := binary.LittleEndian.Uint64(got[:8]), uint64(spec.Warmup+spec.Iterations); w != ops {
				return &ValidationError{Op: spec.Op, QP: i, What: fmt.Sprintf("the target word holds %d after %d operations", w, ops)}
			}
		case spec.Op == OpRead:
			if role&RoleSend == 0 {
				continue
			}
			// A read copies the peer's receive area into this side's
			// send area.
			pattern(want, spec.Seed, 1-side, i)
			if !bytes.Equal(e.SendArea(i)[:n], want[:n]) {
				return &ValidationError{Op: spec.Op, QP: i, What: "the bytes read differ from what the peer holds"}
			}
		default:
			// The responder receives in every run; the requester only
			// the answers of a ping-pong, or in a bidirectional run.
			if side == 0 && spec.Measure != MeasureLatency && !spec.Bidirectional {
				continue
			}
			pattern(want, spec.Seed, 1-side, i)
			if !bytes.Equal(got[:n], want[:n]) {
				return &ValidationError{Op: spec.Op, QP: i, What: "what arrived differs from what the peer sent"}
			}
		}
	}
	return nil
}

// Link relays between two sides in one process what a control channel
// relays between two hosts: each side's "my senders are done", and a stop
// when one side fails or ctx ends. It returns when both sides are done.
// It waits on channels only: a poll here would steal CPU from spinning
// workers and show up in their latency tail.
func Link(ctx context.Context, a, b *SideRun) {
	aOwn, bOwn := a.OwnDoneC(), b.OwnDoneC()
	aEnd, bEnd := a.Done(), b.Done()
	stop := ctx.Done()
	for aEnd != nil || bEnd != nil {
		select {
		case <-stop:
			a.Stop()
			b.Stop()
			stop = nil
		case <-aOwn:
			b.PeerDone()
			aOwn = nil
		case <-bOwn:
			a.PeerDone()
			bOwn = nil
		case <-aEnd:
			// A finished side sends no more, whether it succeeded or not.
			b.PeerDone()
			if a.Failed() {
				b.Stop()
			}
			aEnd, aOwn = nil, nil
		case <-bEnd:
			a.PeerDone()
			if b.Failed() {
				a.Stop()
			}
			bEnd, bOwn = nil, nil
		}
	}
}

// ErrStopped is the error of a side that ended because it was asked to,
// or because the other side failed.
var ErrStopped = errors.New("rdma: run stopped")

// FirstError picks the error that explains a failed run: a side's own
// failure over the other side's ErrStopped.
func FirstError(errs ...error) error {
	var stopped error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, ErrStopped):
			stopped = err
		default:
			return err
		}
	}
	return stopped
}
