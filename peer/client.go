package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// ClientConfig says where the local end is and how to reach the responder.
type ClientConfig struct {
	Addr     string // host:port of rdmarun serve; the port defaults to DefaultPort
	Token    string
	TLS      *tls.Config
	Device   string // local device
	Port     int
	GIDIndex int
	// PeerDevice and PeerGIDIndex ask the responder for a device and GID;
	// empty / nil leave it to the responder's own settings.
	PeerDevice   string
	PeerGIDIndex *int
	// StepTimeout bounds each control step; 0 means 10 s.
	StepTimeout time.Duration
	// Logger, when set, hears each step at debug level: what a probe did
	// before it failed is what its operator asks first.
	Logger *slog.Logger
}

// Error is a failed remote test: which responder, at what stage, and why.
type Error struct {
	Addr  string
	Stage Stage
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("responder %s, %s: %v", e.Addr, e.Stage, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes an Error from before the responder accepted this client match
// ErrUnreachable.
func (e *Error) Is(target error) bool {
	return target == ErrUnreachable && (e.Stage == StageConnecting || e.Stage == StageHandshake)
}

// ErrUnreachable matches a remote test that failed before the responder
// accepted this client (it cannot be dialled, or refuses the token or the
// protocol): every later test to it would fail the same way, so callers
// treat it as the environment failing rather than the fabric.
var ErrUnreachable = errors.New("peer: responder unreachable or refusing this client")

// Stage is the step of a remote test that failed; its text reads in the
// error message ("responder h:1, connecting: ...").
type Stage string

// The stages, in the order a test passes them.
const (
	StageConnecting  Stage = "connecting"
	StageHandshake   Stage = "handshake"
	StageSendSpec    Stage = "sending the spec"
	StageSetup       Stage = "setting up its side"
	StageEndpoints   Stage = "exchanging endpoints"
	StageStarting    Stage = "starting"
	StageTest        Stage = "during the test"
	StageAwaitResult Stage = "waiting for its result"
	StageResult      Stage = "reading its result"
)

// RemoteSideError is a failure the responder reported about its own side.
// One that was a dead path (Timeout) matches ctrl.ErrPeerTimeout, as the
// same failure does when the responder reports it before the test.
type RemoteSideError struct {
	Msg     string
	Timeout bool
}

func (e *RemoteSideError) Error() string { return "responder side failed: " + e.Msg }

func (e *RemoteSideError) Is(target error) bool { return e.Timeout && target == ctrl.ErrPeerTimeout }

// Run runs spec against the responder at cfg.Addr. The local endpoint is
// created here and freed before Run returns.
func Run(ctx context.Context, cfg ClientConfig, spec rdma.Test) (*rdma.Result, error) {
	if err := spec.Ready(); err != nil {
		return nil, err
	}
	addr := cfg.Addr
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, DefaultPort)
	}
	step := cfg.StepTimeout
	if step == 0 {
		step = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	since := func() string { return time.Since(start).Round(time.Microsecond).String() }
	wrap := func(stage Stage, err error) error {
		log.Debug("failed", "stage", stage, "after", since(), "err", err)
		return &Error{Addr: addr, Stage: stage, Err: err}
	}
	stepCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, step) }

	ep, err := rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: cfg.Device, Port: cfg.Port, GIDIndex: cfg.GIDIndex}))
	if err != nil {
		log.Debug("local endpoint failed", "device", cfg.Device, "err", err)
		return nil, err
	}
	defer ep.Close()
	log.Debug("local endpoint ready", "device", cfg.Device, "gid", ep.Info().GID.String(), "qps", len(ep.Info().QPNs), "spec", spec.String(), "after", since())

	sctx, cancel := stepCtx()
	nc, err := ctrl.Dial(sctx, addr, cfg.TLS)
	cancel()
	if err != nil {
		return nil, wrap(StageConnecting, err)
	}
	sctx, cancel = stepCtx()
	c, err := ctrl.Client(sctx, nc, cfg.Token)
	cancel()
	if err != nil {
		return nil, wrap(StageHandshake, err)
	}
	defer c.Close()
	log.Debug("control channel up", "responder", addr, "tls", cfg.TLS != nil, "after", since())
	send := func(stage Stage, k ctrl.Kind, v any) error {
		sctx, cancel := stepCtx()
		defer cancel()
		if err := c.Send(sctx, k, v); err != nil {
			return wrap(stage, err)
		}
		return nil
	}
	recv := func(stage Stage, k ctrl.Kind, v any) error {
		sctx, cancel := stepCtx()
		defer cancel()
		if err := c.Recv(sctx, k, v); err != nil {
			return wrap(stage, err)
		}
		return nil
	}

	if err := send(StageSendSpec, ctrl.KindSpec, specMsg{Spec: spec.Settings(), Device: cfg.PeerDevice, GIDIndex: cfg.PeerGIDIndex}); err != nil {
		return nil, err
	}
	var ok specOKMsg
	if err := recv(StageSetup, ctrl.KindSpecOK, &ok); err != nil {
		return nil, err
	}
	if err := send(StageEndpoints, ctrl.KindEndpoints, toWire(ep.Info())); err != nil {
		return nil, err
	}
	var theirs endpointMsg
	if err := recv(StageEndpoints, ctrl.KindEndpoints, &theirs); err != nil {
		return nil, err
	}
	peerInfo := theirs.info()
	if err := ep.Connect(peerInfo, spec.QP); err != nil {
		log.Debug("connecting the QPs failed", "err", err, "after", since())
		return nil, err
	}
	log.Debug("QPs connected", "peer_device", peerInfo.Device, "peer_gid", peerInfo.GID.String(), "after", since())
	role, _ := rdma.Roles(spec)
	side, err := ep.Prepare(spec, 0, role, peerInfo)
	if err != nil {
		return nil, err
	}
	defer side.Close()
	if err := send(StageStarting, ctrl.KindReady, nil); err != nil {
		return nil, err
	}
	if err := recv(StageStarting, ctrl.KindStart, nil); err != nil {
		return nil, err
	}
	side.Start()
	log.Debug("test started", "after", since())
	if err := relay(ctx, c, side, step, time.Duration(spec.StallTimeout)); err != nil {
		// The local side's own failure, if any, says more than the
		// broken channel.
		return nil, wrap(StageTest, rdma.FirstError(sideErr(side), err))
	}
	mine, localErr := side.Result()
	// The responder answers once its side is done: it may still be
	// draining, so allow it the stall deadline on top of a step.
	rctx, cancel := context.WithTimeout(ctx, step+time.Duration(spec.StallTimeout))
	var theirRes resultMsg
	err = c.Recv(rctx, ctrl.KindResult, &theirRes)
	cancel()
	if err != nil {
		if localErr != nil {
			return nil, localErr
		}
		return nil, wrap(StageAwaitResult, err)
	}
	bctx, bcancel := stepCtx()
	_ = c.Send(bctx, ctrl.KindBye, nil)
	bcancel()
	var remoteErr error
	if theirRes.Error != "" {
		remoteErr = &RemoteSideError{Msg: theirRes.Error, Timeout: theirRes.Timeout}
		if theirRes.Stopped {
			remoteErr = fmt.Errorf("%w: %w", rdma.ErrStopped, remoteErr)
		}
	}
	if err := rdma.FirstError(localErr, remoteErr); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rdma: run stopped: %w", ctx.Err())
		}
		return nil, err
	}
	if theirRes.Side == nil {
		return nil, wrap(StageResult, errors.New("no result and no error"))
	}
	spec.QP = ep.Attrs()
	log.Debug("test done", "after", since())
	return rdma.Assemble(spec, ep.Info(), peerInfo, mine, theirRes.Side), nil
}

func sideErr(s *rdma.SideRun) error {
	_, err := s.Result()
	return err
}
