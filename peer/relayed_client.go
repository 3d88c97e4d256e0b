package peer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// Remote is the responder a relayed test runs against (B), as the relaying
// responder (A) dials it.
type Remote struct {
	Addr     string // host:port; the port defaults to ctrl.DefaultPort
	Device   string // B's device; empty: B's default
	GIDIndex *int   // B's GID index; nil: B's setting
}

// The stages of a relayed test on the coordinator's hop to A; A's own
// test against B reports the stages of Run.
const (
	StageRelayRequest Stage = "asking it to relay the test"
	StageRelayWait    Stage = "waiting for its relayed result"
	// StageRemoteSide: B reported that its side of the test failed.
	StageRemoteSide Stage = "on its side of the test"
)

// RelayedError is a relayed test that failed past the coordinator's hop:
// A answered, but its test against B failed. Stage and Addr say where:
// a stage of A's control channel to B with B's address, StageRemoteSide
// for B's side, or no stage for A's own side. It matches ErrUnreachable
// when B could not be reached or refused A (the environment, not the
// fabric), ctrl.ErrPeerTimeout for a dead path, rdma.ErrStopped for a
// side that only stopped because the other failed.
type RelayedError struct {
	Via         string // A
	Addr        string // B, when the failure was on A's hop to B
	Stage       Stage
	Msg         string
	Unreachable bool
	Timeout     bool
	Stopped     bool
	Setup       string // SetupRelay: A's own host set-up failed; SetupPeer: B's
}

func (e *RelayedError) Error() string {
	if e.Stage == "" {
		return fmt.Sprintf("responder %s, relaying the test: its own side failed: %s", e.Via, e.Msg)
	}
	return fmt.Sprintf("responder %s, relaying the test: responder %s, %s: %s", e.Via, e.Addr, e.Stage, e.Msg)
}

func (e *RelayedError) Is(target error) bool {
	switch target {
	case ErrUnreachable:
		return e.Unreachable
	case ctrl.ErrPeerTimeout:
		return e.Timeout
	case rdma.ErrStopped:
		return e.Stopped
	}
	return false
}

// Relayed is A's answer to a relayed test.
type Relayed struct {
	// Result is the whole result, both sides, as Run would return it on A.
	Result *rdma.Result
	// LinkGbps is the rate of A's port (the requester's) as A read it, in
	// 10^9 bit/s: what a threshold's link_gbps is. 0 when A could not read
	// it or is of a release that did not send it.
	LinkGbps float64
}

// RunVia has the responder at cfg.Addr (A) run spec as a client against
// the responder b (B) and returns the whole result, both sides, as Run
// would on A, with the rate of A's port. No RDMA runs here: A's device is cfg.PeerDevice (empty:
// A's default) and cfg.PeerGIDIndex; cfg.Device, Port and GIDIndex are
// not used. A failure on the hop to A is an *Error: A down, refusing
// this client (ErrUnreachable), busy, or silent or gone before it
// answered; none of them says anything about the fabric. One of A's test
// is a *RelayedError: the environment when it matches ErrUnreachable (B
// down or refusing A), else the test's own failure. The wait for A's answer is bounded by the test's own
// length when it has one, and always by A's limit on one test; cancelling
// ctx makes A stop its test and free everything.
func RunVia(ctx context.Context, cfg ClientConfig, b Remote, spec rdma.Test) (*Relayed, error) {
	if err := spec.Ready(); err != nil {
		return nil, err
	}
	if b.Addr == "" {
		return nil, errors.New("peer: a relayed test needs the address of the responder to run against (Remote.Addr)")
	}
	ch, err := dialControl(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, addr, step, wrap := ch.conn, ch.addr, ch.step, ch.wrap
	// Closing is what tells A to stop when ctx ends early.
	defer c.Close()

	req := relayMsg{
		Version: RelayVersion, Spec: spec.Settings(),
		Device: cfg.PeerDevice, GIDIndex: cfg.PeerGIDIndex,
		Peer: relayPeer(b),
	}
	sctx, cancel := context.WithTimeout(ctx, step)
	err = c.Send(sctx, ctrl.KindRelay, req)
	var ok relayOKMsg
	if err == nil {
		err = c.Recv(sctx, ctrl.KindRelayOK, &ok)
	}
	cancel()
	if err != nil {
		return nil, wrap(StageRelayRequest, olderResponder(err))
	}

	rctx, cancel := context.WithTimeout(ctx, relayWait(spec, step, time.Duration(ok.Within)))
	var res relayResultMsg
	err = c.Recv(rctx, ctrl.KindRelayResult, &res)
	cancel()
	if err != nil {
		return nil, wrap(StageRelayWait, err)
	}
	bctx, bcancel := context.WithTimeout(ctx, step)
	_ = c.Send(bctx, ctrl.KindBye, nil)
	bcancel()
	if f := res.Error; f != nil {
		return nil, &RelayedError{Via: addr, Addr: f.Addr, Stage: f.Stage, Msg: f.Msg, Unreachable: f.Unreachable, Timeout: f.Timeout, Stopped: f.Stopped, Setup: f.Setup}
	}
	r, err := res.result()
	if err != nil {
		return nil, wrap(StageRelayWait, err)
	}
	rate := res.LinkGbps
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		// A threshold would judge a nonsense rate as a real one.
		return nil, wrap(StageRelayWait, fmt.Errorf("the relayed port rate %v is not a rate", rate))
	}
	return &Relayed{Result: r, LinkGbps: rate}, nil
}

// relayWait bounds the wait for A's answer. A promised one within its
// limit on a test (within); a test of fixed length needs no more than
// the setup steps, its duration and a stall limit to drain, each with
// a step to spare.
func relayWait(spec rdma.Test, step, within time.Duration) time.Duration {
	bound := within + 2*step
	if d := time.Duration(spec.Duration); d > 0 {
		// Connect, handshake, spec, endpoints, start, the result and the
		// answer: seven steps on A's hop to B.
		if own := 8*step + d + 2*spec.StallLimit(); own < bound || within <= 0 {
			bound = own
		}
	}
	if within <= 0 && spec.Duration == 0 {
		// A promised nothing: hold it to the responder's default limit.
		bound = 10*time.Minute + 2*step
	}
	return bound
}

// olderResponder explains a responder that hung up on the relay request
// without a word: what a build before relayed tests does.
func olderResponder(err error) error {
	if hungUp(err) {
		return fmt.Errorf("%w (it closed the connection on the relay request: a responder of an rdmarun release before relayed tests (relay version %d) does that; upgrade it)", err, RelayVersion)
	}
	return err
}
