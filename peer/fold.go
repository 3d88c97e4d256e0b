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

// A kept session runs folded when both ends agree (specMsg.Folded): a
// run is then two messages, the client's Ready and the responder's
// Result, where an unfolded run takes five (Ready, Start, a Done each
// way, Result); in busy-poll mode, three (below). Under emulation each
// message costs both processes a wake-up, and a prober's run of ten
// round trips pays for them on every probe. Two changes make it safe:
//
//   - The responder prepares run N+1, its receives posted, before it
//     sends run N's Result (resultMsg.Next), so the client may start
//     sending as soon as it has said Ready.
//   - Only ping-pong latency runs given by iterations (not on UD) fold: there each
//     side knows when it is done (it has made or answered its round
//     trips), so the Done that tells a bandwidth receiver, or a duration
//     run's responder, to stop carries no news. A side that fails still
//     says so at once: the responder in its Result, the client in a Done.
//
// Counters read around a run are not folded: the responder's snapshot
// is taken when a run is prepared, and a folded run is prepared an idle
// interval before it starts.
//
// In busy-poll mode the responder still says Start (three messages a
// run): a client that spins from its Ready takes the CPU the responder
// needs to wake and start its side, and with a few probes at once on
// two CPUs that wait grew into milliseconds of spinning per run
// (exporter/README.md, probe cost). A client in event mode sleeps until
// the first answer, so it needs no Start.

// foldable reports whether a kept session of spec may run folded.
func foldable(spec rdma.Test, noCounters bool) bool {
	// A UD responder cannot know its end: requests may be lost.
	return spec.Measure == rdma.MeasureLatency && spec.Op.PingPong() && spec.Duration == 0 && spec.QPType != rdma.UD && noCounters
}

// startSaid reports whether the responder says Start before a run of
// spec whose side it prepared ahead (prepared) or not.
func startSaid(spec rdma.Test, prepared bool) bool {
	return !prepared || spec.Mode == rdma.ModeBusyPoll
}

// incoming is one message read while a side runs.
type incoming struct {
	kind    ctrl.Kind
	payload json.RawMessage
	err     error
}

// readOne reads the next message into a channel, so that a side's end
// and the peer's news can be waited for together; cancelling ctx ends
// the read. The read waits as long as the test may run, not the
// channel's own read timeout (ctrl.DefaultTimeout), which a long run
// outlasts: the side's stall deadline bounds the traffic, the caller's
// timers bound the wait once its side is done, and ctx (the responder's
// test limit) bounds the whole test.
func readOne(ctx context.Context, c *ctrl.Conn) <-chan incoming {
	rctx, cancel := context.WithTimeout(ctx, 24*time.Hour)
	ch := make(chan incoming, 1)
	go func() {
		defer cancel()
		k, p, err := c.RecvAny(rctx)
		ch <- incoming{k, p, err}
	}()
	return ch
}

// serveFolded is the responder's part while a folded run's side runs: it
// returns when the side has exited. The client says nothing unless its
// own side failed, in a Done, which stops this side at once; clientFailed
// then reports it, and the session ends after this run's Result.
func serveFolded(ctx context.Context, c *ctrl.Conn, side *rdma.SideRun, step time.Duration) (clientFailed bool, linkErr error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	news := readOne(rctx, c)
	select {
	case <-side.Exited():
		// Nothing more is coming unless the client failed at the same
		// moment. A read cancelled before its first byte leaves the
		// stream in step (ctrl.Conn.recv): a Done on its way is read by
		// the wait for the next run, which ends the session for it.
		cancel()
		m := <-news
		if m.err == nil {
			if m.kind != ctrl.KindDone {
				return false, fmt.Errorf("control channel: %s while the test ran, want done", m.kind)
			}
			return true, nil
		}
		return false, nil
	case m := <-news:
		side.MarkPeerFinished()
		switch {
		case m.err != nil:
			side.Stop()
			linkErr = fmt.Errorf("control channel: %w", m.err)
		case m.kind != ctrl.KindDone:
			side.Stop()
			linkErr = fmt.Errorf("control channel: %s while the test ran, want done", m.kind)
		}
		// A side told the peer is done, or stopped, ends within a
		// step; past that it is stopped, as the unfolded relay does.
		select {
		case <-side.Exited():
		case <-time.After(step):
			side.Stop()
			<-side.Exited()
		}
		return linkErr == nil, linkErr
	case <-ctx.Done():
		side.Stop()
		<-side.Exited()
		return false, ctx.Err()
	}
}

// runFolded is the client's part while a folded run's side runs: it
// returns the responder's Result once this side has exited and the
// Result is in. A Result that reports a failure stops this side at once;
// a side of this end that fails first says so in a Done, so that the
// responder does not wait out its stall deadline. The Result is allowed
// the drain time past this side's end, as the unfolded run allows it.
func runFolded(ctx context.Context, c *ctrl.Conn, side *rdma.SideRun, step, drain time.Duration) (*resultMsg, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	news := readOne(rctx, c)
	end := side.Exited()
	var res *resultMsg
	var giveUp <-chan time.Time
	var linkErr error
	for end != nil || (res == nil && linkErr == nil) {
		select {
		case m := <-news:
			news = nil
			switch {
			case m.err != nil:
				linkErr = fmt.Errorf("control channel: %w", m.err)
			case m.kind != ctrl.KindResult:
				linkErr = fmt.Errorf("control channel: %s while the test ran, want result", m.kind)
			default:
				var r resultMsg
				if err := json.Unmarshal(m.payload, &r); err != nil {
					linkErr = fmt.Errorf("control channel: the result does not decode: %w", err)
				} else {
					res = &r
				}
			}
			if linkErr != nil || res.Error != "" {
				side.Stop()
			}
			// The responder is done: this side's last completions are
			// in flight, and end within the stall deadline.
			side.MarkPeerFinished()
		case <-end:
			end = nil
			if res == nil && linkErr == nil {
				if side.Failed() {
					sctx, scancel := context.WithTimeout(ctx, step)
					if err := c.Send(sctx, ctrl.KindDone, nil); err != nil {
						linkErr = fmt.Errorf("control channel: %w", err)
					}
					scancel()
				}
				giveUp = time.After(step + drain)
			}
		case <-giveUp:
			side.Stop()
			return nil, errors.New("control channel: the responder did not send its result in time")
		case <-ctx.Done():
			side.Stop()
			<-side.Exited()
			return nil, ctx.Err()
		}
	}
	return res, linkErr
}
