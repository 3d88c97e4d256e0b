package peer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// relay is the control channel's part while a side runs: it tells the
// peer when this side's senders are done, hands the peer's Done to the
// side, and stops the side when the peer reports an error or the channel
// breaks. It returns once this side has finished and the peer's Done has
// arrived (or can no longer arrive); a non-nil error means the channel
// failed. It waits on channels only, never polls: a wake-up here would
// steal CPU from the spinning workers and show in their latency tail.
func relay(ctx context.Context, c *ctrl.Conn, side *rdma.SideRun, step, drain time.Duration) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	news := readOne(rctx, c)
	own, end := side.SendersFinished(), side.Exited()
	told, peerDone := false, false
	var linkErr error
	var giveUp <-chan time.Time
	tell := func() {
		if told {
			return
		}
		told = true
		sctx, scancel := context.WithTimeout(ctx, step)
		defer scancel()
		if err := c.Send(sctx, ctrl.KindDone, nil); err != nil && linkErr == nil {
			side.Stop()
			linkErr = fmt.Errorf("control channel: %w", err)
		}
	}
	// Loop until this side's end has been handled (end == nil: the peer
	// was told) and the peer's Done is in.
	for end != nil || !peerDone {
		select {
		case m := <-news:
			peerDone = true
			switch {
			case m.err != nil:
				side.Stop()
				linkErr = fmt.Errorf("control channel: %w", m.err)
			case m.kind == ctrl.KindDone:
				side.MarkPeerFinished()
			default:
				side.Stop()
				linkErr = fmt.Errorf("control channel: %s while the test ran, want done", m.kind)
			}
		case <-own:
			tell()
			own = nil
		case <-end:
			// A finished side sends no more, whether it succeeded or
			// not; the peer must not wait for it.
			tell()
			end, own = nil, nil
			// The peer gets a bounded time to finish its own side: a
			// step when this side failed, the stall deadline more when
			// it succeeded (the peer may still be draining: its last wait may take
			// the stall limit while its port keeps receiving). A passive
			// responder finishes at once and waits for the client as
			// long as the test runs.
			switch {
			case side.Failed():
				giveUp = time.After(step)
			case side.HasWorkers():
				giveUp = time.After(step + drain)
			}
		case <-giveUp:
			return errors.New("control channel: the peer did not finish its side in time")
		case <-ctx.Done():
			side.Stop()
			return ctx.Err()
		}
	}
	return linkErr
}
