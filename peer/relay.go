package peer

import (
	"context"
	"encoding/json"
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
// failed.
func relay(ctx context.Context, c *ctrl.Conn, side *rdma.SideRun, step time.Duration) error {
	type msg struct {
		kind ctrl.Kind
		body json.RawMessage
		err  error
	}
	incoming := make(chan msg, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Reads wait as long as the test may run; the side's own stall
		// deadline bounds the traffic, ctx bounds the whole test.
		k, body, err := c.RecvAny(rctx)
		incoming <- msg{k, body, err}
	}()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	told, peerDone := false, false
	var giveUp time.Time
	var linkErr error
	for {
		select {
		case m := <-incoming:
			switch {
			case m.err != nil:
				side.Stop()
				linkErr = fmt.Errorf("control channel: %w", m.err)
				peerDone = true
			case m.kind == ctrl.KindDone:
				side.PeerDone()
				peerDone = true
			default:
				side.Stop()
				linkErr = fmt.Errorf("control channel: %s while the test ran, want done", m.kind)
				peerDone = true
			}
		case <-ctx.Done():
			side.Stop()
			return ctx.Err()
		case <-tick.C:
		}
		if !told && (side.OwnDone() || side.Finished()) {
			// A side that failed is done sending too; the peer must not
			// wait for it.
			sctx, scancel := context.WithTimeout(ctx, step)
			err := c.Send(sctx, ctrl.KindDone, nil)
			scancel()
			if err != nil && linkErr == nil {
				side.Stop()
				linkErr = fmt.Errorf("control channel: %w", err)
			}
			told = true
		}
		if side.Finished() && peerDone {
			return linkErr
		}
		// A side that failed gives the peer a bounded time to finish
		// its own; one that succeeded waits as long as the test may
		// (a passive responder has no workers and finishes at once).
		if side.Failed() && !peerDone {
			if giveUp.IsZero() {
				giveUp = time.Now().Add(step)
			} else if time.Now().After(giveUp) {
				return errors.New("control channel: the peer did not finish its side in time")
			}
		}
	}
}
