package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// Session is one spec set up between this host and a responder: the
// control channel, this end's endpoint and its QPs connected to the
// responder's. A session the responder agreed to keep runs the spec
// again and again, each run costing only its own traffic, as a prober
// that tests the same peer every few seconds needs; any other runs once.
type Session struct {
	control
	cfg  ClientConfig
	spec rdma.Test
	log  *slog.Logger
	ep   *rdma.Endpoint
	peer rdma.EndpointInfo
	// idle is how long the responder keeps the session between runs;
	// 0: it serves one run.
	idle   time.Duration
	setup  time.Duration
	runs   int
	last   time.Time // when the last run ended
	broken bool
	closed bool
	// folded: the responder runs the session folded (fold.go); next:
	// it has prepared the next run, which may start without its Start.
	folded, next bool
	// shared: ep is the caller's (a multicast sender's, one for all its
	// receivers' sessions), which Close leaves open.
	shared bool
	// connectStats is the CM set-up of the QPs (connect: rdma_cm), which
	// the session's first run reports.
	connectStats *rdma.ConnectStats
}

// Dial connects to the responder at cfg.Addr and sets up both ends of
// spec, up to QPs ready to send. keep asks the responder to keep the
// session for that long between runs; 0 asks for one run. The responder
// may grant less, or nothing (a build before sessions, or one at its
// limit of sessions): Idle says what it granted.
func Dial(ctx context.Context, cfg ClientConfig, spec rdma.Test, keep time.Duration) (_ *Session, err error) {
	return dial(ctx, cfg, spec, keep, nil)
}

// dial is Dial on the caller's endpoint when ep is not nil: the session
// then uses it as it is, connected or joined already.
func dial(ctx context.Context, cfg ClientConfig, spec rdma.Test, keep time.Duration, ep *rdma.Endpoint) (_ *Session, err error) {
	if err := spec.Ready(); err != nil {
		return nil, err
	}
	if spec.Measure == rdma.MeasureConnect {
		keep = 0 // its one run is the connecting; another needs new connections
	}
	start := time.Now()
	s := &Session{cfg: cfg, spec: spec, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	log := s.log
	since := func() string { return time.Since(start).Round(time.Microsecond).String() }
	defer func() {
		if err != nil {
			s.broken = true
			s.Close()
		}
	}()

	if ep != nil {
		s.ep, s.shared = ep, true
	} else if s.ep, err = rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: cfg.Device, Port: cfg.Port, GIDIndex: cfg.GIDIndex, SkipPortCounters: cfg.SkipPortCounters})); err != nil {
		log.Debug("local endpoint failed", "device", cfg.Device, "err", err)
		return nil, err
	}
	log.Debug("local endpoint ready", "device", cfg.Device, "gid", s.ep.Info().GID.String(), "qps", len(s.ep.Info().QPNs), "spec", spec.String(), "after", since())

	if s.control, err = dialControl(ctx, cfg); err != nil {
		log.Debug("failed", "err", err)
		return nil, err
	}
	log.Debug("control channel up", "responder", s.addr, "tls", cfg.TLS != nil, "after", since())

	req := specMsg{Spec: spec.Settings(), Device: cfg.PeerDevice, GIDIndex: cfg.PeerGIDIndex, KeepMS: keep.Milliseconds(), NoCounters: cfg.SkipPortCounters,
		Folded: keep > 0 && foldable(spec, cfg.SkipPortCounters)}
	if err := s.send(ctx, StageSendSpec, ctrl.KindSpec, req); err != nil {
		return nil, err
	}
	var ok specOKMsg
	if err := s.recv(ctx, StageSetup, ctrl.KindSpecOK, &ok); err != nil {
		return nil, err
	}
	if spec.Connect == rdma.ConnectCM && ok.CM == nil {
		return nil, s.wrap(StageSetup, errors.New("the responder offered no rdma_cm connection: it is an rdmarun from before connect: rdma_cm; upgrade it, or use connect: exchange"))
	}
	if ok.KeepMS > 0 && keep > 0 {
		s.idle = min(time.Duration(ok.KeepMS)*time.Millisecond, keep)
		s.folded = ok.Folded && foldable(spec, cfg.SkipPortCounters)
	}
	if err := s.send(ctx, StageEndpoints, ctrl.KindEndpoints, toWire(s.ep.Info())); err != nil {
		return nil, err
	}
	var theirs endpointMsg
	if err := s.recv(ctx, StageEndpoints, ctrl.KindEndpoints, &theirs); err != nil {
		return nil, err
	}
	s.peer = theirs.info()
	if err := s.connect(ok.CM); err != nil {
		log.Debug("connecting the QPs failed", "err", err, "after", since())
		return nil, err
	}
	s.setup = time.Since(start)
	s.last = time.Now()
	log.Debug("QPs connected", "peer_device", s.peer.Device, "peer_gid", s.peer.GID.String(), "kept_for", s.idle, "after", since())
	return s, nil
}

// connect brings the QPs to ready-to-send with the responder's: by
// exchange, or through the CM to the address the responder offered,
// each request naming the session's nonce and its QP.
func (s *Session) connect(offer *cmOffer) error {
	if s.shared {
		return nil
	}
	if s.spec.Connect != rdma.ConnectCM {
		return s.ep.Connect(s.peer, s.spec.QP)
	}
	addr, err := netip.ParseAddrPort(offer.Addr)
	if err != nil || len(offer.Nonce) != cmNonceLen {
		return s.wrap(StageSetup, fmt.Errorf("the responder's rdma_cm offer (%q, a %d-byte nonce) is not an address and an %d-byte nonce", offer.Addr, len(offer.Nonce), cmNonceLen))
	}
	var nonce cmNonce
	copy(nonce[:], offer.Nonce)
	if err := s.ep.ConnectCM(addr, func(qp int) []byte { return cmPrivate(nonce, qp) }, s.spec.QP, s.step, s.spec.ConnectParallel); err != nil {
		return err
	}
	s.connectStats = rdma.NewConnectStats(s.ep.CMTimes(), s.ep.CMElapsed(), s.spec.ConnectParallel)
	return nil
}

// Setup is how long Dial took: the endpoint, the control channel and its
// handshake, and both ends' QPs brought to ready-to-send.
func (s *Session) Setup() time.Duration { return s.setup }

// Idle is how long the responder keeps the session between runs; 0 when
// it serves one run.
func (s *Session) Idle() time.Duration { return s.idle }

// Usable reports whether Run may go on with the session as it is: the
// responder keeps it, no run failed, it has been idle for less than the
// responder keeps it (less a margin, so a request does not cross the
// responder's giving up), and the control channel is still open and
// silent. Anything else, a restarted responder for one, means a new
// session.
func (s *Session) Usable() bool {
	margin := min(s.step, s.idle/4)
	if s.closed || s.broken || s.idle == 0 || time.Since(s.last) > s.idle-margin {
		return false
	}
	if err := s.conn.Quiet(); err != nil {
		s.log.Debug("session no longer usable", "responder", s.addr, "err", err)
		s.broken = true
		return false
	}
	return true
}

// errSessionOver is a Run on a session that cannot run again.
var errSessionOver = errors.New("peer: the session is closed, failed, or was for one run only; dial a new one")

// Run runs the spec once more. A run that fails leaves the session
// broken: its QPs may be in the error state and the responder has ended
// its side; the caller closes it and dials again.
func (s *Session) Run(ctx context.Context) (*rdma.Result, error) {
	if s.closed || s.broken || (s.runs > 0 && s.idle == 0) {
		return nil, errSessionOver
	}
	run := s.run
	if s.spec.Measure == rdma.MeasureConnect {
		run = s.connectResult
	}
	res, err := run(ctx)
	s.runs++
	s.last = time.Now()
	if err != nil {
		s.broken = true
	}
	return res, err
}

func (s *Session) run(ctx context.Context) (*rdma.Result, error) {
	start := time.Now()
	since := func() string { return time.Since(start).Round(time.Microsecond).String() }
	role, _ := rdma.Roles(s.spec)
	side, err := s.ep.Prepare(s.spec, 0, role, s.peer)
	if err != nil {
		return nil, err
	}
	defer side.Close()
	if err := s.send(ctx, StageStarting, ctrl.KindReady, nil); err != nil {
		return nil, err
	}
	prepared := s.next
	s.next = false
	if startSaid(s.spec, prepared) {
		if err := s.recv(ctx, StageStarting, ctrl.KindStart, nil); err != nil {
			return nil, err
		}
	}
	side.Start()
	s.log.Debug("test started", "run", s.runs+1, "folded", prepared, "after", since())
	if s.folded {
		return s.finishFolded(ctx, side, since)
	}
	if err := relay(ctx, s.conn, side, s.step, s.spec.StallLimit()); err != nil {
		var said *ctrl.RemoteError
		if errors.As(err, &said) {
			// The responder stopped the test and said why (its
			// --max-test): this side's failure, if any, followed from
			// that.
			return nil, s.wrap(StageTest, err)
		}
		// The local side's own failure, if any, says more than the
		// broken channel.
		return nil, s.wrap(StageTest, rdma.FirstError(sideErr(side), err))
	}
	mine, localErr := side.Result()
	// The responder answers once its side is done: it may still be
	// draining, so allow it the stall deadline on top of a step.
	rctx, cancel := context.WithTimeout(ctx, s.step+s.spec.StallLimit())
	var theirRes resultMsg
	err = s.conn.Recv(rctx, ctrl.KindResult, &theirRes)
	cancel()
	if err != nil {
		var said *ctrl.RemoteError
		if localErr != nil && !errors.As(err, &said) {
			return nil, localErr
		}
		// An error frame instead of the result is the responder
		// saying why it stopped the test (its --max-test); this
		// side's failure, if any, followed from that.
		return nil, s.wrap(StageAwaitResult, err)
	}
	if s.idle == 0 {
		// One run: the Bye ends it. A kept session says Bye on Close.
		s.bye(ctx)
	}
	return s.assemble(ctx, mine, localErr, theirRes, since)
}

// connectResult is a measure connect run's result: the set-up Dial
// timed. The responder, which waits for a Bye instead of a Ready, frees
// its side on it.
func (s *Session) connectResult(ctx context.Context) (*rdma.Result, error) {
	s.bye(ctx)
	spec := s.spec
	spec.QP = s.ep.Attrs()
	c := s.connectStats
	s.connectStats = nil
	if c == nil {
		return nil, s.wrap(StageResult, errors.New("measure connect on a session whose QPs were not connected through the CM"))
	}
	return &rdma.Result{Spec: spec, Requester: s.ep.Info(), Responder: s.peer, Elapsed: c.Elapsed, Connect: c, Sides: []rdma.SideSummary{}}, nil
}

// finishFolded ends a folded run (fold.go): the responder's Result is
// read while this side runs, as the news that the responder is done.
func (s *Session) finishFolded(ctx context.Context, side *rdma.SideRun, since func() string) (*rdma.Result, error) {
	theirRes, err := runFolded(ctx, s.conn, side, s.step, s.spec.StallLimit())
	if err != nil {
		var said *ctrl.RemoteError
		if errors.As(err, &said) {
			// The responder stopped the test and said why.
			return nil, s.wrap(StageTest, err)
		}
		return nil, s.wrap(StageTest, rdma.FirstError(sideErr(side), err))
	}
	mine, localErr := side.Result()
	s.next = theirRes.Next
	return s.assemble(ctx, mine, localErr, *theirRes, since)
}

// assemble makes the run's result from both sides' shares, or says which
// side failed and why.
func (s *Session) assemble(ctx context.Context, mine *rdma.SideResult, localErr error, theirRes resultMsg, since func() string) (*rdma.Result, error) {
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
		return nil, s.wrap(StageResult, errors.New("no result and no error"))
	}
	spec := s.spec
	spec.QP = s.ep.Attrs()
	s.log.Debug("test done", "run", s.runs+1, "after", since())
	res := rdma.Assemble(spec, s.ep.Info(), s.peer, mine, theirRes.Side)
	res.Connect, s.connectStats = s.connectStats, nil
	return res, nil
}

// Close ends the session and frees the control channel, then the
// endpoint. A kept session that is still sound first says Bye, so the
// responder frees its side at once rather than at its idle deadline.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.conn != nil {
		if s.idle > 0 && !s.broken {
			s.bye(context.Background())
		}
		s.conn.Close()
	}
	if s.shared {
		return nil
	}
	return s.ep.Close()
}

// bye is a courtesy: its failure changes nothing, so it waits at most a
// step.
func (s *Session) bye(ctx context.Context) {
	bctx, cancel := s.stepCtx(ctx)
	_ = s.conn.Send(bctx, ctrl.KindBye, nil)
	cancel()
}

func (s *Session) stepCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.step)
}

func (s *Session) wrap(stage Stage, err error) error {
	s.log.Debug("failed", "stage", stage, "err", err)
	return s.control.wrap(stage, err)
}

func (s *Session) send(ctx context.Context, stage Stage, k ctrl.Kind, v any) error {
	sctx, cancel := s.stepCtx(ctx)
	defer cancel()
	if err := s.conn.Send(sctx, k, v); err != nil {
		return s.wrap(stage, err)
	}
	return nil
}

func (s *Session) recv(ctx context.Context, stage Stage, k ctrl.Kind, v any) error {
	sctx, cancel := s.stepCtx(ctx)
	defer cancel()
	if err := s.conn.Recv(sctx, k, v); err != nil {
		return s.wrap(stage, err)
	}
	return nil
}
