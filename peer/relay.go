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
	return relayAll(ctx, []*ctrl.Conn{c}, []string{""}, side, step, drain)
}

// relayAll is relay with many peers, as a multicast sender has: each is
// told when this side's senders are done, the side hears that the peers
// are done once every one's Done is in, and any peer's broken channel or
// error stops the side. names[i] names conns[i] in errors ("" for the
// one peer of a pair).
func relayAll(ctx context.Context, conns []*ctrl.Conn, names []string, side *rdma.SideRun, step, drain time.Duration) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type news struct {
		from int
		m    incoming
	}
	all := make(chan news, len(conns))
	for i, c := range conns {
		one := readOne(rctx, c)
		go func() { all <- news{i, <-one} }()
	}
	channel := func(i int) string {
		if names[i] == "" {
			return "control channel"
		}
		return "control channel to " + names[i]
	}
	own, end := side.SendersFinished(), side.Exited()
	told, done := false, 0
	var linkErr error
	var giveUp <-chan time.Time
	fail := func(err error) {
		side.Stop()
		if linkErr == nil {
			linkErr = err
		}
	}
	tell := func() {
		if told {
			return
		}
		told = true
		for i, c := range conns {
			sctx, scancel := context.WithTimeout(ctx, step)
			if err := c.Send(sctx, ctrl.KindDone, nil); err != nil {
				fail(fmt.Errorf("%s: %w", channel(i), err))
			}
			scancel()
		}
	}
	// Loop until this side's end has been handled (end == nil: the peers
	// were told) and every peer's Done is in.
	for end != nil || done < len(conns) {
		select {
		case n := <-all:
			done++
			switch {
			case n.m.err != nil:
				fail(fmt.Errorf("%s: %w", channel(n.from), n.m.err))
			case n.m.kind != ctrl.KindDone:
				fail(fmt.Errorf("%s: %s while the test ran, want done", channel(n.from), n.m.kind))
			case done == len(conns):
				side.MarkPeerFinished()
			}
		case <-own:
			tell()
			own = nil
		case <-end:
			// A finished side sends no more, whether it succeeded or
			// not; the peers must not wait for it. They get a bounded
			// time to finish their own sides.
			tell()
			end, own = nil, nil
			giveUp = peerGrace(side, step, drain)
		case <-giveUp:
			if len(conns) == 1 {
				return errors.New("control channel: the peer did not finish its side in time")
			}
			return errors.New("control channel: a multicast receiver did not finish its side in time")
		case <-ctx.Done():
			side.Stop()
			return ctx.Err()
		}
	}
	return linkErr
}

// peerGrace is how long the peers of a side that has ended get to finish
// theirs: a step when this side failed, the stall deadline more when it
// succeeded (a peer may still be draining: its last wait may take the
// stall limit while its port keeps receiving). A passive side (no
// workers) never gives up: its peer finishes when the test does.
func peerGrace(side *rdma.SideRun, step, drain time.Duration) <-chan time.Time {
	switch {
	case side.Failed():
		return time.After(step)
	case side.HasWorkers():
		return time.After(step + drain)
	}
	return nil
}
