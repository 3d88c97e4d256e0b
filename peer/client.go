package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// ClientConfig says where the local end is and how to reach the responder.
type ClientConfig struct {
	Addr     string // host:port of rdmarun serve; the port defaults to ctrl.DefaultPort
	Token    string
	TLS      *tls.Config
	Device   string // local device
	Port     int
	GIDIndex int
	// PeerDevice and PeerGIDIndex ask the responder for a device and GID;
	// empty / nil leave it to the responder's own settings.
	PeerDevice   string
	PeerGIDIndex *int
	// SkipPortCounters runs without reading either port's counters before
	// and after each run (the responder is asked to skip its own), so the
	// result has no counter deltas: for a prober that exports the port
	// counters on its own.
	SkipPortCounters bool
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

// Run runs spec against the responder at cfg.Addr, once. The local
// endpoint is created here and freed before Run returns.
func Run(ctx context.Context, cfg ClientConfig, spec rdma.Test) (*rdma.Result, error) {
	s, err := Dial(ctx, cfg, spec, 0)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Run(ctx)
}

func sideErr(s *rdma.SideRun) error {
	_, err := s.Result()
	return err
}
