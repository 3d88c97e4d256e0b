package peer

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// A client's connect request names the session it belongs to and the QP
// it connects: cmMagic, the nonce the responder gave that session over
// the authenticated control channel, and the QP's index (little endian).
// The nonce keeps one client's requests out of another's session; it
// grants nothing else, since a CM connection carries no rkey.
const (
	cmMagic      = "rrcm"
	cmPrivateLen = len(cmMagic) + cmNonceLen + 2
	cmNonceLen   = 8
)

type cmNonce [cmNonceLen]byte

func cmPrivate(n cmNonce, qp int) []byte {
	b := append([]byte(cmMagic), n[:]...)
	return append(b, byte(qp), byte(qp>>8))
}

// parseCMPrivate reads a request's private data, padded with zeros by
// the CM.
func parseCMPrivate(b []byte) (n cmNonce, qp int, ok bool) {
	if len(b) < cmPrivateLen || !bytes.HasPrefix(b, []byte(cmMagic)) {
		return n, 0, false
	}
	copy(n[:], b[len(cmMagic):])
	i := len(cmMagic) + cmNonceLen
	return n, int(b[i]) | int(b[i+1])<<8, true
}

// cmOffer tells a client with connect: rdma_cm where to connect its QPs
// and the nonce its requests must carry.
type cmOffer struct {
	Addr  string `json:"addr"` // ip:port
	Nonce []byte `json:"nonce"`
}

// cmRouted is a request the router matched to a session.
type cmRouted struct {
	req *rdma.CMRequest
	qp  int
}

// cmRouter hands each connect request reaching the responder's CM
// listener to the session expecting it, and rejects the rest with a
// reason the requester's error quotes.
type cmRouter struct {
	l    *rdma.CMListener
	log  func(msg string, args ...any)
	done chan struct{}

	mu      sync.Mutex
	waiting map[cmNonce]chan cmRouted
}

// cmWait bounds one wait of the routing loop for a request, so that it
// sees the listener closing.
const cmWait = time.Second

func (r *cmRouter) serve() {
	defer close(r.done)
	for {
		req, err := r.l.Next(time.Now().Add(cmWait))
		switch {
		case errors.Is(err, rdma.ErrCMListenerClosed):
			return
		case err != nil:
			r.log("rdma_cm listener", "err", err)
			// A failing channel fails at once; do not spin on it.
			time.Sleep(cmWait)
			continue
		case req == nil:
			continue
		}
		r.route(req)
	}
}

func (r *cmRouter) route(req *rdma.CMRequest) {
	nonce, qp, ok := parseCMPrivate(req.Private)
	if !ok {
		r.reject(req, "not a connect request of an rdmarun test (no session named in its private data)")
		return
	}
	r.mu.Lock()
	ch, ok := r.waiting[nonce]
	r.mu.Unlock()
	if !ok {
		r.reject(req, "no test expects this connect request (its session ended or timed out)")
		return
	}
	select {
	case ch <- cmRouted{req: req, qp: qp}:
	default:
		r.reject(req, fmt.Sprintf("more connect requests than the test has QPs (QP %d)", qp))
	}
}

func (r *cmRouter) reject(req *rdma.CMRequest, reason string) {
	r.log("rdma_cm connect request rejected", "device", req.Device, "reason", reason)
	_ = req.Reject([]byte(rdma.RejectPrefix + reason))
}

// expect registers a session of qps QPs and returns its nonce and the
// channel its requests arrive on; end unregisters it and rejects what
// arrived unclaimed.
func (r *cmRouter) expect(qps int) (nonce cmNonce, ch <-chan cmRouted, end func()) {
	c := make(chan cmRouted, qps)
	r.mu.Lock()
	for {
		_, _ = rand.Read(nonce[:])
		if _, taken := r.waiting[nonce]; !taken {
			break
		}
	}
	r.waiting[nonce] = c
	r.mu.Unlock()
	return nonce, c, func() {
		r.mu.Lock()
		delete(r.waiting, nonce)
		r.mu.Unlock()
		for {
			select {
			case x := <-c:
				r.reject(x.req, "the test's set-up ended before this QP was accepted")
			default:
				return
			}
		}
	}
}

// close stops the listener and waits for the routing loop to end.
func (r *cmRouter) close() {
	_ = r.l.Close()
	<-r.done
}

// ListenCM makes the responder accept rdma_cm connections on addr, for
// tests with connect: rdma_cm: an unspecified address takes them on
// every RDMA device, port 0 a port the CM picks. It returns the address
// listened on. Requests are routed until the context given to Serve
// ends; a responder that never listens refuses such tests, naming this.
func (s *Server) ListenCM(addr netip.AddrPort) (netip.AddrPort, error) {
	l, err := rdma.ListenCM(addr, cmBacklog)
	if err != nil {
		return netip.AddrPort{}, err
	}
	r := &cmRouter{l: l, done: make(chan struct{}), waiting: map[cmNonce]chan cmRouted{},
		log: func(msg string, args ...any) { s.cfg.Logger.Debug(msg, args...) }}
	if !s.cm.CompareAndSwap(nil, r) {
		r.l.Close()
		return netip.AddrPort{}, errors.New("peer: the responder listens for rdma_cm connections already")
	}
	go r.serve()
	return l.Addr(), nil
}

// CloseCM stops the CM listener ListenCM started, if any; Serve does
// when it ends.
func (s *Server) CloseCM() {
	if r := s.cm.Swap(nil); r != nil {
		r.close()
	}
}

// cmBacklog is the listener's queue of requests not yet routed; routing
// takes microseconds, so it only has to hold a burst of sessions' QPs.
const cmBacklog = 1024

// cmSession is a session's side of the CM: its nonce, and the requests
// routed to it.
type cmSession struct {
	offer cmOffer
	ch    <-chan cmRouted
	end   func()
}

// expectCM prepares the responder's endpoint ep to be connected through
// the CM: its address must be one the listener covers.
func (s *Server) expectCM(ep *rdma.Endpoint) (*cmSession, error) {
	r := s.cm.Load()
	if r == nil {
		return nil, errors.New("this responder does not listen for rdma_cm connections (rdmarun serve listens on --cm-port unless --no-cm, and says at start why it could not); use connect: exchange, or fix the responder")
	}
	ip, err := ep.CMAddress()
	if err != nil {
		return nil, err
	}
	if la := r.l.Addr().Addr(); !la.IsUnspecified() && la != ip {
		return nil, fmt.Errorf("this responder's rdma_cm listener is bound to %s, not to %s, the address of %s's GID; listen on all addresses, or choose that device", la, ip, ep.Info().Device)
	}
	nonce, ch, end := r.expect(len(ep.Info().QPNs))
	return &cmSession{offer: cmOffer{Addr: netip.AddrPortFrom(ip, r.l.Addr().Port()).String(), Nonce: nonce[:]}, ch: ch, end: end}, nil
}

// cmQuietCheck is how often the accept loop checks that the client is
// still there.
const cmQuietCheck = 200 * time.Millisecond

// accept connects each QP of ep as the client's requests arrive, and
// waits for all of them to be ESTABLISHED. The client's QPs connect in
// up to three steps of step each, so each request may take that long
// after the last; a client that gives up closes its control channel,
// which ends the wait sooner.
func (x *cmSession) accept(ctx context.Context, c *ctrl.Conn, ep *rdma.Endpoint, attrs rdma.QPAttrs, step time.Duration) error {
	n := len(ep.Info().QPNs)
	wait := 3*step + time.Second
	tick := time.NewTicker(cmQuietCheck)
	defer tick.Stop()
	deadline := time.Now().Add(wait)
	for done := 0; done < n; {
		select {
		case r := <-x.ch:
			if err := ep.AcceptCM(r.req, r.qp, attrs); err != nil {
				_ = r.req.Reject([]byte(rdma.RejectPrefix + "accepting failed on the responder"))
				return err
			}
			done++
			deadline = time.Now().Add(wait)
		case <-tick.C:
			if time.Now().After(deadline) {
				return fmt.Errorf("no rdma_cm connect request for QP %d of %d within %v: the client's CM did not reach %s", done, n, wait, x.offer.Addr)
			}
			if err := c.Quiet(); err != nil {
				return fmt.Errorf("the client left while connecting its QPs through the CM (%d of %d accepted): %w", done, n, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The client answers the last accept within its connect step.
	return ep.AwaitCM(attrs, time.Now().Add(step))
}
