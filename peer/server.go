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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
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
	// HandshakeTimeout bounds each control step; 0 means 10 s.
	StepTimeout time.Duration
	Logger      *slog.Logger
	// DialTLS, when set, is the client TLS configuration for the tests
	// this responder runs itself on a coordinator's behalf (relays).
	DialTLS *tls.Config
	// RelayUnauthenticated lets a client that proved nothing (no token
	// in force, no client certificate) have this responder dial out on
	// its behalf. Without it such relays are served only to loopback
	// clients: a responder must not be a way to reach arbitrary addresses.
	RelayUnauthenticated bool
}

// Server is a responder. It serves any number of tests over its lifetime,
// a few at a time; one client's misbehaviour ends only that client's test.
type Server struct {
	cfg   ServerConfig
	slots chan struct{}
	wg    sync.WaitGroup
	// token is cfg.Token until SetToken replaces it: a fleet rotates its
	// token without stopping the tests in flight.
	token atomic.Pointer[string]

	mu     sync.Mutex
	served int
	failed int
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxTest < 0 || cfg.MaxConcurrent < 0 || cfg.StepTimeout < 0 {
		return nil, errors.New("peer: negative limit in the server config")
	}
	s := &Server{cfg: cfg, slots: make(chan struct{}, cfg.MaxConcurrent)}
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
		select {
		case s.slots <- struct{}{}:
		default:
			// Busy: say so rather than leave the client waiting.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.refuse(ctx, nc, fmt.Sprintf("responder busy: %d tests under way; try again shortly", s.cfg.MaxConcurrent))
			}()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			s.handle(ctx, nc)
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

func (s *Server) handle(ctx context.Context, nc net.Conn) {
	log := s.cfg.Logger.With("client", nc.RemoteAddr().String())
	err := s.serveTest(ctx, nc, log)
	s.mu.Lock()
	s.served++
	if err != nil {
		s.failed++
	}
	s.mu.Unlock()
	switch {
	case errors.Is(err, errHandshake) && errors.Is(err, io.EOF):
		// Connected and left without a word: a port probe or health
		// check, not a failed test.
		log.Debug("connection closed before the handshake", "err", err)
	case err != nil:
		log.Warn("test failed", "err", err)
	default:
		log.Info("test done")
	}
}

var errHandshake = errors.New("handshake")

// serveTest runs one client's test. Every step has a deadline; every
// resource is freed on every path.
func (s *Server) serveTest(parent context.Context, nc net.Conn, log *slog.Logger) error {
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
		ectx, ecancel := s.step(ctx)
		defer ecancel()
		if pathTimedOut(err) {
			_ = c.SendTimeout(ectx, err.Error())
		} else {
			_ = c.SendError(ectx, err.Error())
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
		return fmt.Errorf("reading the spec: %w", err)
	case kind == ctrl.KindRelay:
		return s.serveRelay(ctx, c, payload, log, fail)
	case kind != ctrl.KindSpec:
		return fail(fmt.Errorf("got %s as the first request, want spec or relay", kind))
	}
	if err := json.Unmarshal(payload, &req); err != nil {
		return fail(fmt.Errorf("the spec message does not decode: %w", err))
	}
	spec, err := req.Spec.Complete()
	if err != nil {
		return fail(fmt.Errorf("invalid spec: %w", err))
	}
	if d := time.Duration(spec.Duration); d > s.cfg.MaxTest {
		return fail(fmt.Errorf("duration %v exceeds this responder's limit of %v", d, s.cfg.MaxTest))
	}
	dev := s.cfg.Device
	if req.Device != "" {
		dev = req.Device
	}
	if dev == "" {
		return fail(errors.New("no device named by the client and none configured on the responder (rdmarun serve --device)"))
	}
	gid := s.cfg.GIDIndex
	if req.GIDIndex != nil {
		gid = *req.GIDIndex
	}
	log = log.With("op", spec.Op, "measure", spec.Measure, "device", dev)
	ep, err := rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: dev, Port: s.cfg.Port, GIDIndex: gid}))
	if err != nil {
		return fail(err)
	}
	defer ep.Close()
	if err := s.send(ctx, c, ctrl.KindSpecOK, specOKMsg{Device: dev}); err != nil {
		return err
	}

	var theirs endpointMsg
	if err := s.recv(ctx, c, ctrl.KindEndpoints, &theirs); err != nil {
		return err
	}
	if err := ep.Connect(theirs.info(), spec.QP); err != nil {
		return fail(err)
	}
	if err := s.send(ctx, c, ctrl.KindEndpoints, toWire(ep.Info())); err != nil {
		return err
	}
	_, role := rdma.Roles(spec)
	side, err := ep.Prepare(spec, 1, role, theirs.info())
	if err != nil {
		return fail(err)
	}
	defer side.Close()
	if err := s.recv(ctx, c, ctrl.KindReady, nil); err != nil {
		return err
	}
	side.Start()
	if err := s.send(ctx, c, ctrl.KindStart, nil); err != nil {
		side.Stop()
		return err
	}
	log.Debug("started")

	linkErr := relay(ctx, c, side, s.cfg.StepTimeout, time.Duration(spec.StallTimeout))
	res, runErr := side.Result()
	msg := resultMsg{Side: res}
	if runErr != nil {
		msg.Side = nil
		msg.Error = runErr.Error()
		msg.Stopped = errors.Is(runErr, rdma.ErrStopped)
		msg.Timeout = pathTimedOut(runErr)
	}
	if linkErr != nil {
		// The client is gone or broke the protocol: nobody to tell.
		return linkErr
	}
	if err := s.send(ctx, c, ctrl.KindResult, msg); err != nil {
		return err
	}
	// The client's Bye is a courtesy; its absence changes nothing.
	bctx, bcancel := s.step(ctx)
	_ = c.Recv(bctx, ctrl.KindBye, nil)
	bcancel()
	return runErr
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
