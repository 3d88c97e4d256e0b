package peer

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// serveRelay runs a coordinator's relayed test: this responder (A) runs
// the test as a client against the responder the request names (B) and
// sends back the whole result. It holds the slot of the coordinator's
// connection, so the outgoing test counts against MaxConcurrent. When the
// coordinator goes away, the outgoing test stops and everything is freed.
func (s *Server) serveRelay(ctx context.Context, c *ctrl.Conn, payload json.RawMessage, log *slog.Logger, fail func(error) error) error {
	var req relayMsg
	if err := json.Unmarshal(payload, &req); err != nil {
		return fail(fmt.Errorf("the relay request does not decode: %w", err))
	}
	if req.Version != RelayVersion {
		return fail(fmt.Errorf("relay request version %d; this responder speaks relay version %d: run the same rdmarun release on the coordinator and the responders", req.Version, RelayVersion))
	}
	if s.cfg.NoRelay {
		return fail(fmt.Errorf("this responder does not run tests against other responders for a coordinator (%s); turn its relays on to test pairs from it", s.cfg.LimitKeys.Relay))
	}
	if !s.relayAllowed(c) {
		return fail(fmt.Errorf("this responder relays tests only for authenticated clients (a token or a client certificate) or loopback ones; give the fleet a token, or allow unauthenticated clients (%s)", s.cfg.LimitKeys.Unauthenticated))
	}
	spec, err := req.Spec.Complete()
	if err != nil {
		return fail(fmt.Errorf("invalid spec: %w", err))
	}
	// The outgoing test's endpoint is this responder's memory and QPs
	// like any other; Dial sizes it from the spec alone, as here.
	unbook, err := s.admit(spec, rdma.SpecConfig(spec, rdma.EndpointConfig{}))
	if err != nil {
		return fail(err)
	}
	defer unbook()
	addr, err := relayAddr(req.Peer.Addr)
	if err != nil {
		return fail(err)
	}
	dev, gid, err := s.answerOn(req.Device, req.GIDIndex, "coordinator")
	if err != nil {
		return fail(err)
	}
	log = log.With("relay_to", addr, "op", spec.Op, "measure", spec.Measure, "device", dev)
	// ctx carries MaxTest: the outgoing test ends by then whatever B
	// does, and the answer follows within a step.
	within := s.cfg.MaxTest
	if dl, ok := ctx.Deadline(); ok {
		within = time.Until(dl)
	}
	if err := s.send(ctx, c, ctrl.KindRelayOK, relayOKMsg{Version: RelayVersion, Device: dev, Within: rdma.Duration(within)}); err != nil {
		return err
	}

	// The coordinator sends nothing until the result: anything it sends,
	// or its connection closing, means it gave up, and the outgoing test
	// stops at once.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	watch, unwatch := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() {
		k, _, err := c.RecvAny(watch)
		if watch.Err() != nil {
			left <- nil
			return
		}
		if err == nil {
			err = fmt.Errorf("the coordinator sent %s while the test ran", k)
		}
		log.Debug("the coordinator left; stopping the test", "err", err)
		stop()
		left <- err
	}()
	log.Debug("relaying")
	res, runErr := Run(rctx, ClientConfig{
		Addr: addr, Token: *s.token.Load(), TLS: s.cfg.DialTLS,
		Device: dev, Port: s.cfg.Port, GIDIndex: gid,
		PeerDevice: req.Peer.Device, PeerGIDIndex: req.Peer.GIDIndex,
		StepTimeout: s.cfg.StepTimeout, Logger: log,
	}, spec)
	unwatch()
	if gone := <-left; gone != nil {
		return fmt.Errorf("relayed test to %s stopped: the coordinator went away: %w", addr, gone)
	}
	msg := relayResultMsg{Result: res}
	if runErr == nil {
		msg.LinkGbps = portRate(res.Requester.Device, res.Requester.Port)
	}
	if runErr != nil {
		msg = relayResultMsg{Error: relayFailureOf(addr, runErr)}
	}
	if err := s.send(ctx, c, ctrl.KindRelayResult, msg); err != nil {
		return err
	}
	bctx, bcancel := s.step(ctx)
	_ = c.Recv(bctx, ctrl.KindBye, nil)
	bcancel()
	if runErr != nil {
		return fmt.Errorf("relayed test to %s: %w", addr, runErr)
	}
	return nil
}

// relayAllowed: the client proved itself (the token handshake, or a
// verified client certificate), or it is on this host, or the operator
// allowed unauthenticated relays.
func (s *Server) relayAllowed(c *ctrl.Conn) bool {
	if *s.token.Load() != "" || s.cfg.RelayUnauthenticated {
		return true
	}
	if tc, ok := c.NetConn().(*tls.Conn); ok && len(tc.ConnectionState().VerifiedChains) > 0 {
		return true
	}
	if a, ok := c.NetConn().RemoteAddr().(*net.TCPAddr); ok && a.IP.IsLoopback() {
		return true
	}
	return false
}

// relayAddr checks the address a relay request names.
func relayAddr(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("the relay request names no peer address")
	}
	addr = ctrl.WithDefaultPort(addr)
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return "", fmt.Errorf("the relay request's peer address %q is not host:port", addr)
	}
	return addr, nil
}

// relayFailureOf says where A's test against B failed, for the
// coordinator to tell the environment (B unreachable) from the fabric.
func relayFailureOf(addr string, err error) *relayFailure {
	f := &relayFailure{
		Msg:         err.Error(),
		Unreachable: errors.Is(err, ErrUnreachable),
		Timeout:     errors.Is(err, ctrl.ErrPeerTimeout) || pathTimedOut(err),
		Stopped:     errors.Is(err, rdma.ErrStopped),
		Setup:       setupOf(err),
	}
	var pe *Error
	var side *RemoteSideError
	switch {
	case errors.As(err, &pe):
		f.Stage, f.Addr, f.Msg = pe.Stage, pe.Addr, pe.Err.Error()
	case errors.As(err, &side):
		f.Stage, f.Addr = StageRemoteSide, addr
	}
	return f
}

// portRate is the rate of a device's port (0: port 1) as the kernel
// reports it, or 0 when it cannot be read.
func portRate(device string, port int) float64 {
	devs, err := rdma.Devices()
	if err != nil {
		return 0
	}
	if port == 0 {
		port = 1
	}
	for _, d := range devs {
		if d.Name != device {
			continue
		}
		if p, err := d.Port(port); err == nil {
			return p.RateGbps
		}
	}
	return 0
}
