package rdma

import (
	"context"
	"errors"
)

// Role says what one side's workers do in a test. The numbers are enum
// rr_role's in shim.h (enums_linux.go fails to build if they differ).
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

// link relays between two sides in one process what a control channel
// relays between two hosts: each side's "my senders are done", and a stop
// when one side fails or ctx ends. It returns when both sides have exited.
// It waits on channels only: a poll here would steal CPU from spinning
// workers and show up in their latency tail.
func link(ctx context.Context, a, b *SideRun) {
	aSent, bSent := a.SendersFinished(), b.SendersFinished()
	aEnd, bEnd := a.Exited(), b.Exited()
	stop := ctx.Done()
	for aEnd != nil || bEnd != nil {
		select {
		case <-stop:
			a.Stop()
			b.Stop()
			stop = nil
		case <-aSent:
			b.MarkPeerFinished()
			aSent = nil
		case <-bSent:
			a.MarkPeerFinished()
			bSent = nil
		case <-aEnd:
			// A finished side sends no more, whether it succeeded or not.
			b.MarkPeerFinished()
			if a.Failed() {
				b.Stop()
			}
			aEnd, aSent = nil, nil
		case <-bEnd:
			a.MarkPeerFinished()
			if b.Failed() {
				a.Stop()
			}
			bEnd, bSent = nil, nil
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
