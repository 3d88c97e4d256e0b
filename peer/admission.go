package peer

import (
	"cmp"
	"fmt"
	"sync"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// LimitKeys names, in refusals, where the operator sets each of the
// responder's limits and switches, so the message says what to change:
// rdmarun serve's flags (ServeLimitKeys) unless the program embedding
// the responder sets them otherwise (rdmarun_exporter's responder.*
// keys).
type LimitKeys struct {
	Concurrent string // MaxConcurrent
	Memory     string // MaxMemory
	QPs        string // MaxQPs
	Test       string // MaxTest
	// Device names the default device, for a test that names none.
	Device string
	// Unauthenticated is what lets clients that proved nothing relay.
	Unauthenticated string
	// Relay is what turns relayed tests off (NoRelay), and on again.
	Relay string
}

// ServeLimitKeys are rdmarun serve's flags, the default LimitKeys.
var ServeLimitKeys = LimitKeys{Concurrent: "--max-concurrent", Memory: "--max-memory", QPs: "--max-qps", Test: "--max-test",
	Device: "--device", Unauthenticated: "--allow-unauthenticated", Relay: "--no-relay"}

// or is k with each unset key taken from d.
func (k LimitKeys) or(d LimitKeys) LimitKeys {
	return LimitKeys{Concurrent: cmp.Or(k.Concurrent, d.Concurrent), Memory: cmp.Or(k.Memory, d.Memory), QPs: cmp.Or(k.QPs, d.QPs),
		Test: cmp.Or(k.Test, d.Test), Device: cmp.Or(k.Device, d.Device), Unauthenticated: cmp.Or(k.Unauthenticated, d.Unauthenticated),
		Relay: cmp.Or(k.Relay, d.Relay)}
}

// LimitError is a test refused for asking more than the responder
// allows. Its text reaches the client word for word, so it names the
// limit, what the test asked and what is allowed.
type LimitError struct {
	Limit   string // where the operator sets it, e.g. "--max-memory" (LimitKeys)
	Asked   string // "the test registers 2GiB"
	Allowed string // "1GiB per test"
	// Retry: the test would fit once other tests end (the total was
	// reached, not the per-test limit).
	Retry bool
}

func (e *LimitError) Error() string {
	msg := fmt.Sprintf("responder refused: %s; the responder allows %s (%s)", e.Asked, e.Allowed, e.Limit)
	if e.Retry {
		msg += "; retry when they end"
	}
	return msg
}

// admit checks spec against the limits of one test and books its
// registered memory against the total; release gives the memory back
// once the endpoint is closed. cfg is the endpoint configuration the
// test will run with: its RegisteredBytes is what NewEndpoint pins.
func (s *Server) admit(spec rdma.Test, cfg rdma.EndpointConfig) (release func(), err error) {
	if d := time.Duration(spec.Duration); d > 0 {
		// A run holds the responder for its duration, then for as long
		// as a side may take to drain (the stall deadline) and the
		// result takes to come back (a step). A test that fits only
		// without them would be cut off at its end, its result lost:
		// refuse it now.
		extra := time.Duration(spec.StallTimeout) + s.cfg.StepTimeout
		if d+extra > s.cfg.MaxTest {
			return nil, &LimitError{Limit: s.cfg.LimitKeys.Test, Asked: fmt.Sprintf("the test runs for %v, plus up to %v to drain and answer", d, extra), Allowed: fmt.Sprintf("%v per test", s.cfg.MaxTest)}
		}
	}
	if spec.QPs > s.cfg.MaxQPs {
		return nil, &LimitError{Limit: s.cfg.LimitKeys.QPs, Asked: fmt.Sprintf("the test uses %d QPs", spec.QPs), Allowed: fmt.Sprintf("%d per test", s.cfg.MaxQPs)}
	}
	return s.memory.reserve(cfg.RegisteredBytes(), s.cfg.LimitKeys.Memory)
}

// memoryBudget is the memory registered for tests and kept sessions at
// once, held from admission until the endpoint is closed.
type memoryBudget struct {
	max int64

	mu      sync.Mutex
	used    int64
	holders int
}

func (b *memoryBudget) reserve(n int64, key string) (release func(), err error) {
	if n > b.max {
		return nil, &LimitError{Limit: key, Asked: "the test registers " + sizeText(n), Allowed: sizeText(b.max) + " per test and in total"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return nil, &LimitError{Limit: key, Retry: true,
			Asked:   fmt.Sprintf("the test registers %s and %d tests and kept sessions hold %s", sizeText(n), b.holders, sizeText(b.used)),
			Allowed: sizeText(b.max) + " in total"}
	}
	b.used += n
	b.holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.used -= n
			b.holders--
			b.mu.Unlock()
		})
	}, nil
}

// inUse is the memory booked and by how many tests and sessions.
func (b *memoryBudget) inUse() (int64, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.holders
}

func sizeText(n int64) string { return units.FormatBytes(uint64(n)) }
