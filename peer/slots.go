package peer

import (
	"context"
	"errors"
	"time"
)

// slot is a connection's claim on one of the tests served at once. A
// kept session gives it up between runs.
type slot struct {
	srv  *Server
	held bool
}

// tryAcquire takes a slot if one is free.
func (sl *slot) tryAcquire() bool {
	select {
	case sl.srv.slots <- struct{}{}:
		sl.took()
		return true
	default:
		return false
	}
}

// took books the slot, expected back within a step (the handshake and
// the spec) until expect says more.
func (sl *slot) took() {
	sl.held = true
	sl.expect(sl.srv.cfg.StepTimeout)
}

// expect records that the slot's test should give it up within d.
func (sl *slot) expect(d time.Duration) {
	sl.srv.mu.Lock()
	sl.srv.ends[sl] = time.Now().Add(d)
	sl.srv.mu.Unlock()
}

func (sl *slot) release() {
	if sl.held {
		sl.srv.mu.Lock()
		delete(sl.srv.ends, sl)
		sl.srv.mu.Unlock()
		<-sl.srv.slots
		sl.held = false
	}
}

var errNoSlot = errors.New("no test slot")

// acquire waits at most wait for a slot.
func (sl *slot) acquire(ctx context.Context, wait time.Duration) error {
	if sl.held {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case sl.srv.slots <- struct{}{}:
		sl.took()
		return nil
	case <-t.C:
		return errNoSlot
	case <-ctx.Done():
		return ctx.Err()
	}
}

// busy is the answer to a client that finds every slot taken: how many
// tests are under way and when the first of them should end (its
// duration, if it has one, and a step for the result; a step for one
// still in its set-up), in whole seconds, at least 1 and at most
// MaxTest. It is a hint, not a promise: a test without a duration may
// run longer, and other clients may take the slot first.
func (s *Server) busy() string {
	s.mu.Lock()
	running := len(s.ends)
	first := time.Duration(-1)
	for _, end := range s.ends {
		if d := time.Until(end); first < 0 || d < first {
			first = d
		}
	}
	s.mu.Unlock()
	retry := min(max(first, time.Second), s.cfg.MaxTest)
	retry = (retry + time.Second - 1).Truncate(time.Second)
	return busyMessage(running, s.cfg.MaxConcurrent, retry, s.cfg.LimitKeys.Concurrent)
}
