package peer

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/rdma"
)

// ServerConfig is the responder's own configuration: where its RDMA
// device is and who may use it. Everything about a test comes from the
// client.
type ServerConfig struct {
	Device   string // default device; a client may name another
	Port     int    // RDMA port; 0 means 1
	GIDIndex int    // rdma.AutoGIDIndex chooses
	Token    string
	// MaxTest bounds how long one test may hold the responder, however
	// the client behaves; 0 means 10 minutes.
	MaxTest time.Duration
	// MaxConcurrent bounds the tests served at once; 0 means 4.
	MaxConcurrent int
	// StepTimeout bounds each control step (the handshake, each message
	// of a test, a refusal). A test is given one past its duration: at
	// admission, to drain and answer, and in the retry time a busy
	// responder tells other clients. A kept session's next run waits up
	// to one for a test slot. 0 means 10 s.
	StepTimeout time.Duration
	// MaxSessions bounds the sessions kept between runs for clients that
	// ask (a prober testing this responder every few seconds); a client
	// beyond it is served one run at a time. 0 means 256, negative none;
	// a session holds its QPs and buffer while idle, but no test slot.
	MaxSessions int
	// MaxIdle bounds how long a kept session may wait for its next run;
	// 0 means 5 minutes.
	MaxIdle time.Duration
	// MaxMemory bounds the memory the responder registers for clients,
	// for one test and for all tests and kept sessions together: a test
	// that would pass it is refused before anything is registered. 0
	// means 1 GiB. One limit, not two: the operator's question is how
	// much of this host the responder may pin, and one test may take
	// all of it when nothing else runs.
	MaxMemory int64
	// MaxQPs bounds the QPs of one test; 0 means 64.
	MaxQPs int
	// LimitKeys names the limits in refusals; zero fields take
	// ServeLimitKeys'.
	LimitKeys LimitKeys
	Logger    *slog.Logger
	// DialTLS, when set, is the client TLS configuration for the tests
	// this responder runs itself on a coordinator's behalf (relays).
	DialTLS *tls.Config
	// RelayUnauthenticated lets a client that proved nothing (no token
	// in force, no client certificate) have this responder dial out on
	// its behalf. Without it such relays are served only to loopback
	// clients: a responder must not be a way to reach arbitrary addresses.
	RelayUnauthenticated bool
	// NoRelay refuses relayed tests: the responder answers tests and
	// never dials out on a client's behalf.
	NoRelay bool
	// DoctorEnv is the host a doctor request looks at; nil means this
	// one (doctor.HostEnv, with the ports' MTUs from verbs). Tests give
	// a saved host's files.
	DoctorEnv func() doctor.Env
	// Devices lists the host's RDMA devices for a device listing (a
	// fleet's devices: auto); nil means rdma.Devices. Tests give their
	// own.
	Devices func() ([]rdma.Device, error)
}

// Server is a responder. It serves any number of tests over its lifetime,
// a few at a time; one client's misbehaviour ends only that client's test.
type Server struct {
	cfg   ServerConfig
	slots chan struct{}
	wg    sync.WaitGroup
	// memory books the registered memory of tests and kept sessions
	// (MaxMemory).
	memory memoryBudget
	// token is cfg.Token until SetToken replaces it: a fleet rotates its
	// token without stopping the tests in flight.
	token atomic.Pointer[string]

	// kept counts the sessions kept between runs (MaxSessions).
	kept atomic.Int64
	// cm routes rdma_cm connect requests to sessions; nil until ListenCM.
	cm atomic.Pointer[cmRouter]

	mu     sync.Mutex
	served int
	failed int
	// checks counts the connections that closed without a word: TCP
	// readiness checks, in neither served nor failed.
	checks int
	// ends holds, for each test holding a slot, when it is expected to
	// give it up: what a busy answer's retry hint is made of.
	ends map[*slot]time.Time
}

// NewServer checks cfg and returns a responder.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	if cfg.MaxTest == 0 {
		cfg.MaxTest = 10 * time.Minute
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = 4
	}
	if cfg.StepTimeout == 0 {
		cfg.StepTimeout = 10 * time.Second
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = 256
	}
	if cfg.MaxIdle == 0 {
		cfg.MaxIdle = 5 * time.Minute
	}
	if cfg.MaxMemory == 0 {
		cfg.MaxMemory = 1 << 30
	}
	if cfg.MaxQPs == 0 {
		cfg.MaxQPs = 64
	}
	cfg.LimitKeys = cfg.LimitKeys.or(ServeLimitKeys)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxTest < 0 || cfg.MaxConcurrent < 0 || cfg.StepTimeout < 0 || cfg.MaxIdle < 0 || cfg.MaxMemory < 0 || cfg.MaxQPs < 0 {
		return nil, errors.New("peer: negative limit in the server config")
	}
	s := &Server{cfg: cfg, slots: make(chan struct{}, cfg.MaxConcurrent), memory: memoryBudget{max: cfg.MaxMemory}, ends: map[*slot]time.Time{}}
	s.token.Store(&cfg.Token)
	return s, nil
}

// SetToken makes token the one new connections must prove; tests already
// past their handshake go on. A server started with a token cannot be
// set to none: an empty token would turn authentication off.
func (s *Server) SetToken(token string) error {
	if token == "" && *s.token.Load() != "" {
		return errors.New("peer: an empty token would turn authentication off")
	}
	s.token.Store(&token)
	return nil
}

// Stats reports how many tests the server finished and how many of them
// failed.
func (s *Server) Stats() (served, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served, s.failed
}

// Serve accepts connections on ln until ctx ends, then closes ln and
// waits for the tests under way (they end within their bounds).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	defer s.CloseCM()
	defer s.wg.Wait()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("peer: accept: %w", err)
		}
		sl := &slot{srv: s}
		if !sl.tryAcquire() {
			// Busy: say so rather than leave the client waiting.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.refuse(ctx, nc, s.busy())
			}()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer sl.release()
			s.handle(ctx, nc, sl)
		}()
	}
}

func (s *Server) refuse(ctx context.Context, nc net.Conn, msg string) {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	c, err := ctrl.Server(sctx, nc, *s.token.Load())
	if err != nil {
		return
	}
	_ = c.SendError(sctx, msg)
	c.Close()
}

func (s *Server) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.StepTimeout)
}

func (s *Server) handle(ctx context.Context, nc net.Conn, sl *slot) {
	log := s.cfg.Logger.With("client", nc.RemoteAddr().String())
	err := s.serveTest(ctx, nc, sl, log)
	check := readinessCheck(err)
	s.mu.Lock()
	switch {
	case check:
		s.checks++
	case err != nil:
		s.served++
		s.failed++
	default:
		s.served++
	}
	s.mu.Unlock()
	switch {
	case check:
		log.Debug("connection closed before the handshake: a readiness check, not a test", "err", err)
	case err != nil:
		log.Warn("test failed", "err", err)
	default:
		log.Info("test done")
	}
}

var errHandshake = errors.New("handshake")

// serveTest runs one client's test, or the runs of a session it asked
// to keep. Every step has a deadline; every resource is freed on every
// path.
func (s *Server) serveTest(parent context.Context, nc net.Conn, sl *slot, log *slog.Logger) error {
	// The set-up is bounded like a test; each run gets its own bound.
	ctx, cancel := context.WithTimeout(parent, s.cfg.MaxTest)
	defer cancel()
	sctx, scancel := s.step(ctx)
	c, err := ctrl.Server(sctx, nc, *s.token.Load())
	scancel()
	if err != nil {
		return fmt.Errorf("%w: %w", errHandshake, err)
	}
	defer c.Close()
	fail := func(err error) error {
		// parent, not ctx: a kept session outlives the set-up's bound.
		ectx, ecancel := s.step(parent)
		defer ecancel()
		switch {
		case pathTimedOut(err):
			_ = c.SendTimeout(ectx, err.Error())
		case HostSetup(err):
			_ = c.SendSetup(ectx, err.Error())
		default:
			_ = c.SendError(ectx, err.Error())
		}
		return err
	}
	// overran tells the client which limit ended a set-up that ran out
	// of the test's bound (a slow device, or a client slow between its
	// steps); any other step failure is returned as it is. By the clock,
	// not ctx.Err(): the channel's deadline, set to ctx's, fires first.
	overran := func(err error) error {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) && parent.Err() == nil {
			return fail(fmt.Errorf("the test's set-up ran past the %v this responder allows per test (%s) and was stopped (%w); raise the limit, or find what made the set-up slow", s.cfg.MaxTest, s.cfg.LimitKeys.Test, err))
		}
		return err
	}

	var req specMsg
	sctx, scancel = s.step(ctx)
	kind, payload, err := c.RecvAny(sctx)
	scancel()
	switch {
	case errors.Is(err, ctrl.ErrUnknownKind):
		return fail(fmt.Errorf("this responder speaks control protocol version %d and does not know the request (%w); the client is of a newer rdmarun: upgrade the responder", ctrl.Version, err))
	case err != nil:
		return overran(fmt.Errorf("reading the spec: %w", err))
	case kind == ctrl.KindRelay:
		return s.serveRelay(ctx, c, payload, log, fail)
	case kind == ctrl.KindDoctor:
		return s.serveDoctor(ctx, c, payload, fail)
	case kind != ctrl.KindSpec:
		return fail(fmt.Errorf("got %s as the first request, want spec, relay or doctor", kind))
	}
	if err := json.Unmarshal(payload, &req); err != nil {
		return fail(fmt.Errorf("the spec message does not decode: %w", err))
	}
	spec, err := req.Spec.Complete()
	if err != nil {
		return fail(fmt.Errorf("invalid spec: %w", err))
	}
	dev, gid, err := s.answerOn(req.Device, req.GIDIndex, "client")
	if err != nil {
		return fail(err)
	}
	log = log.With("op", spec.Op, "measure", spec.Measure, "device", dev)
	epCfg := rdma.SpecConfig(spec, rdma.EndpointConfig{Device: dev, Port: s.cfg.Port, GIDIndex: gid, SkipPortCounters: req.NoCounters})
	unbook, err := s.admit(spec, epCfg)
	if err != nil {
		return fail(err)
	}
	// Deferred first, so it runs after ep.Close: the memory is booked
	// until it is really unregistered.
	defer unbook()
	sl.expect(time.Duration(spec.Duration) + s.cfg.StepTimeout)
	ep, err := rdma.NewEndpoint(epCfg)
	if err != nil {
		return fail(err)
	}
	defer ep.Close()
	idle := s.keep(time.Duration(req.KeepMS) * time.Millisecond)
	if idle > 0 {
		defer s.kept.Add(-1)
	}
	folded := req.Folded && idle > 0 && foldable(spec, req.NoCounters)
	ok := specOKMsg{Device: dev, KeepMS: idle.Milliseconds(), Folded: folded}
	var cm *cmSession
	if spec.Connect == rdma.ConnectCM {
		if cm, err = s.expectCM(ep); err != nil {
			return fail(err)
		}
		defer cm.end()
		ok.CM = &cm.offer
	}
	if err := s.send(ctx, c, ctrl.KindSpecOK, ok); err != nil {
		return overran(err)
	}

	var theirs endpointMsg
	if err := s.recv(ctx, c, ctrl.KindEndpoints, &theirs); err != nil {
		return overran(err)
	}
	if err := s.connect(ctx, c, ep, spec, theirs.info(), cm); err != nil {
		if errors.Is(err, errChannel) {
			return overran(err)
		}
		return fail(err)
	}
	if spec.Measure == rdma.MeasureConnect {
		// The connections were the test: the client, which timed them,
		// says Bye, or closes, and this side's QPs close with ep.
		bctx, bcancel := s.step(parent)
		_ = c.Recv(bctx, ctrl.KindBye, nil)
		bcancel()
		return nil
	}
	if err := s.recv(ctx, c, ctrl.KindReady, nil); err != nil {
		return overran(err)
	}
	// prepared is a folded session's next run, set up before the last
	// run's result was sent.
	var prepared *rdma.SideRun
	defer func() {
		if prepared != nil {
			prepared.Close()
		}
	}()
	for run := 1; ; run++ {
		rctx, rcancel := context.WithTimeout(parent, s.cfg.MaxTest)
		side := prepared
		prepared = nil
		var err error
		prepared, err = s.serveRun(rctx, c, ep, spec, theirs.info(), log, fail, side, folded)
		rcancel()
		if err != nil || idle == 0 {
			if idle == 0 && err == nil {
				// The client's Bye is a courtesy; its absence changes nothing.
				bctx, bcancel := s.step(parent)
				_ = c.Recv(bctx, ctrl.KindBye, nil)
				bcancel()
			}
			return err
		}
		// A kept session waits for its next run without a test slot:
		// an idle prober must not keep tests out.
		sl.release()
		more, err := s.nextRun(parent, c, idle, run)
		if !more || err != nil {
			return err
		}
		if err := sl.acquire(parent, s.cfg.StepTimeout); err != nil {
			if errors.Is(err, errNoSlot) {
				return fail(errors.New(s.busy()))
			}
			return fail(err)
		}
		sl.expect(time.Duration(spec.Duration) + s.cfg.StepTimeout)
		log.Debug("session run", "run", run+1)
	}
}

// errChannel marks a failure of the control channel itself.
var errChannel = errors.New("control channel")

// connect brings ep's QPs to ready-to-send with the client's, and tells
// the client this side's endpoint: by exchange, the QPs connected first;
// through the CM, the endpoint sent first, since the client connects
// once it has it.
func (s *Server) connect(ctx context.Context, c *ctrl.Conn, ep *rdma.Endpoint, spec rdma.Test, theirs rdma.EndpointInfo, cm *cmSession) error {
	switch {
	case spec.Multicast != "":
		// A multicast receiver has no peer QP: it joins the group the
		// client sends to, before the client hears it is ready.
		group, err := netip.ParseAddr(spec.Multicast)
		if err != nil {
			return fmt.Errorf("the client's test names multicast %q, not a group address (a client resolves auto before it asks)", spec.Multicast)
		}
		if err := ep.JoinMulticast(group, false, spec.QP, s.cfg.StepTimeout); err != nil {
			return err
		}
	case cm == nil:
		if err := ep.Connect(theirs, spec.QP); err != nil {
			return err
		}
	}
	if err := s.send(ctx, c, ctrl.KindEndpoints, toWire(ep.Info())); err != nil {
		return fmt.Errorf("%w: %w", errChannel, err)
	}
	if cm == nil {
		return nil
	}
	return cm.accept(ctx, c, ep, spec.QP, s.cfg.StepTimeout)
}

// keep is how long a session whose client asked for asked is kept
// between runs, and books it: 0 when the client asked for one run or the
// responder keeps MaxSessions already (the client is then served one run
// at a time, as before sessions).
func (s *Server) keep(asked time.Duration) time.Duration {
	if asked <= 0 || s.cfg.MaxSessions < 0 {
		return 0
	}
	if s.kept.Add(1) > int64(s.cfg.MaxSessions) {
		s.kept.Add(-1)
		return 0
	}
	return min(asked, s.cfg.MaxIdle)
}

// nextRun waits for a kept session's next Ready. It reports false, with
// no error, when the client ends the session (Bye, or closing between
// runs) or lets it idle out.
func (s *Server) nextRun(ctx context.Context, c *ctrl.Conn, idle time.Duration, runs int) (bool, error) {
	ictx, cancel := context.WithTimeout(ctx, idle)
	defer cancel()
	kind, _, err := c.RecvAny(ictx)
	switch {
	case err == nil && kind == ctrl.KindReady:
		return true, nil
	case err == nil && kind == ctrl.KindBye:
		return false, nil
	case err == nil && kind == ctrl.KindDone:
		// A folded run's client failed as this side succeeded: its
		// Done crossed the result, and the client ends the session.
		s.cfg.Logger.Debug("session over: the client's side of the last run failed", "client", c.Peer(), "runs", runs)
		return false, nil
	case err == nil:
		return false, fmt.Errorf("got %s between the runs of a session, want ready or bye", kind)
	case ctx.Err() != nil || errors.Is(err, io.EOF) || isTimeout(err):
		s.cfg.Logger.Debug("session over", "client", c.Peer(), "runs", runs, "why", err)
		return false, nil
	}
	return false, fmt.Errorf("waiting for the next run: %w", err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// serveRun runs one run of spec on ep, the client having said Ready: on
// prepared, the side a folded session set up for it (the client is then
// already sending), or on a side prepared now. In a folded session it
// returns the next run's side, prepared before the result is sent.
func (s *Server) serveRun(ctx context.Context, c *ctrl.Conn, ep *rdma.Endpoint, spec rdma.Test, theirs rdma.EndpointInfo, log *slog.Logger, fail func(error) error, prepared *rdma.SideRun, folded bool) (next *rdma.SideRun, err error) {
	_, role := rdma.Roles(spec)
	side := prepared
	if side == nil {
		if side, err = ep.Prepare(spec, 1, role, theirs); err != nil {
			return nil, fail(err)
		}
	}
	defer side.Close()
	side.Start()
	if startSaid(spec, prepared != nil) {
		if err := s.send(ctx, c, ctrl.KindStart, nil); err != nil {
			side.Stop()
			return nil, err
		}
	}
	log.Debug("started", "folded", prepared != nil)

	var linkErr error
	clientFailed := false
	if folded {
		clientFailed, linkErr = serveFolded(ctx, c, side, s.cfg.StepTimeout)
	} else {
		linkErr = relay(ctx, c, side, s.cfg.StepTimeout, spec.StallLimit())
	}
	res, runErr := side.Result()
	msg := resultMsg{Side: res}
	if runErr != nil {
		msg.Side = nil
		msg.Error = runErr.Error()
		msg.Stopped = errors.Is(runErr, rdma.ErrStopped)
		msg.Timeout = pathTimedOut(runErr)
	}
	if linkErr != nil {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			// The run, not the client, hit the bound: the client is
			// still there and must learn which limit stopped it. By
			// the clock, not ctx.Err(): the channel's read deadline,
			// set to ctx's, may fire before ctx's own timer.
			return nil, fail(fmt.Errorf("the test ran for the %v this responder allows per test (%s) and was stopped; a test given by iterations cannot be bounded before it runs: give it a duration, or fewer iterations", s.cfg.MaxTest, s.cfg.LimitKeys.Test))
		}
		// The client is gone or broke the protocol: nobody to tell.
		return nil, linkErr
	}
	if folded && runErr == nil && !clientFailed {
		// The side is closed first (the deferred Close is then a no-op):
		// the next one reuses its endpoint's wake fd and buffers. A next
		// run that cannot be prepared only unfolds the session: the
		// result says so, and the client waits for Start.
		side.Close()
		if next, err = ep.Prepare(spec, 1, role, theirs); err != nil {
			log.Debug("preparing the next run failed; it will be prepared when asked", "err", err)
			next = nil
		}
		msg.Next = next != nil
	}
	if err := s.send(ctx, c, ctrl.KindResult, msg); err != nil {
		if next != nil {
			next.Close()
		}
		return nil, err
	}
	return next, runErr
}

func (s *Server) send(ctx context.Context, c *ctrl.Conn, k ctrl.Kind, v any) error {
	sctx, cancel := s.step(ctx)
	defer cancel()
	if err := c.Send(sctx, k, v); err != nil {
		return fmt.Errorf("sending %s: %w", k, err)
	}
	return nil
}

func (s *Server) recv(ctx context.Context, c *ctrl.Conn, k ctrl.Kind, v any) error {
	sctx, cancel := s.step(ctx)
	defer cancel()
	if err := c.Recv(sctx, k, v); err != nil {
		return fmt.Errorf("waiting for %s: %w", k, err)
	}
	return nil
}

// pathTimedOut reports a failure that means the RDMA path to the client
// is dead rather than a fault of either program: connecting the QP found
// no answer from the client's address (ETIMEDOUT), or the transfer
// stalled. The client counts these as timeouts, as it does its own.
func pathTimedOut(err error) bool {
	var se *rdma.StallError
	return errors.Is(err, syscall.ETIMEDOUT) || errors.As(err, &se)
}
