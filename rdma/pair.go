package rdma

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Pair is two endpoints in one process connected to each other: on two
// devices, or twice on one device. It needs nothing of C beyond what
// Endpoint and SideRun offer, so builds without libibverbs share it (and
// fail in NewLoopbackPair).
type Pair struct {
	Requester, Responder *Endpoint
	// ran: a run has reported the connection's set-up already.
	ran bool
}

// newPair creates both endpoints, unconnected.
func newPair(requester, responder EndpointConfig) (*Pair, error) {
	a, err := NewEndpoint(requester)
	if err != nil {
		return nil, err
	}
	b, err := NewEndpoint(responder)
	if err != nil {
		a.Close()
		return nil, err
	}
	return &Pair{Requester: a, Responder: b}, nil
}

// NewLoopbackPair creates both endpoints and connects them.
func NewLoopbackPair(requester, responder EndpointConfig, attrs QPAttrs) (*Pair, error) {
	p, err := newPair(requester, responder)
	if err != nil {
		return nil, err
	}
	a, b := p.Requester, p.Responder
	if err := a.Connect(b.Info(), attrs); err != nil {
		p.Close()
		return nil, err
	}
	if err := b.Connect(a.Info(), attrs); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// NewCMPair creates both endpoints and connects them through the RDMA
// connection manager: the responder listens on its GID's address, on a
// port the CM picks, and the requester connects each QP from its own,
// naming the QP's index in the request's private data, at most parallel
// QPs at once. Each step waits at most timeout.
func NewCMPair(requester, responder EndpointConfig, attrs QPAttrs, timeout time.Duration, parallel int) (*Pair, error) {
	p, err := newPair(requester, responder)
	if err != nil {
		return nil, err
	}
	a, b := p.Requester, p.Responder
	info := b.Info()
	addr, err := b.CMAddress()
	if err != nil {
		p.Close()
		return nil, err
	}
	l, err := ListenCM(netip.AddrPortFrom(addr, 0), len(info.QPNs))
	if err != nil {
		p.Close()
		return nil, err
	}
	accepted := make(chan error, 1)
	go func() { accepted <- acceptPair(l, b, len(info.QPNs), attrs, timeout) }()
	err = a.ConnectCM(l.Addr(), func(qp int) []byte { return []byte{byte(qp), byte(qp >> 8)} }, attrs, timeout, parallel)
	if err != nil {
		// No more requests come: closing the listener ends the
		// acceptor's wait now rather than at its deadline.
		l.Close()
		<-accepted
		p.Close()
		return nil, err
	}
	err = errors.Join(<-accepted, l.Close())
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// acceptPair accepts n requests on l for endpoint e, each naming its QP
// in the first two bytes of its private data, and waits for all of them
// to be ESTABLISHED.
func acceptPair(l *CMListener, e *Endpoint, n int, attrs QPAttrs, timeout time.Duration) error {
	for range n {
		// The requester's three steps may each take timeout before its
		// request leaves.
		r, err := l.Next(time.Now().Add(3*timeout + time.Second))
		if err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("rdma: no CM connect request within %v on %s", 3*timeout+time.Second, l.Addr())
		}
		if len(r.Private) < 2 {
			_ = r.Reject(nil)
			return fmt.Errorf("rdma: a CM connect request with %d bytes of private data, not the QP index", len(r.Private))
		}
		if err := e.AcceptCM(r, int(r.Private[0])|int(r.Private[1])<<8, attrs); err != nil {
			_ = r.Reject(nil) // frees the request unless the endpoint took it
			return err
		}
	}
	// The last requester answers its accept within its connect step.
	return e.AwaitCM(attrs, time.Now().Add(timeout))
}

// Close closes both endpoints.
func (p *Pair) Close() error {
	return errors.Join(p.Requester.Close(), p.Responder.Close())
}

// Run runs spec between the pair's endpoints, each side in its own
// threads as if the other were remote. ctx ends the run early (the result
// then is an error).
func (p *Pair) Run(ctx context.Context, spec Test) (*Result, error) {
	err := spec.Ready()
	if err != nil {
		return nil, err
	}
	if spec.Measure == MeasureConnect {
		return p.connectResult(spec)
	}
	reqRole, respRole := Roles(spec)
	resp, err := p.Responder.Prepare(spec, 1, respRole, p.Requester.Info())
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	req, err := p.Requester.Prepare(spec, 0, reqRole, p.Responder.Info())
	if err != nil {
		return nil, err
	}
	defer req.Close()
	resp.Start()
	req.Start()
	link(ctx, req, resp)
	reqRes, reqErr := req.Result()
	respRes, respErr := resp.Result()
	if err := FirstError(reqErr, respErr); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rdma: run stopped: %w", ctx.Err())
		}
		return nil, err
	}
	spec.QP = p.Requester.Attrs()
	res := Assemble(spec, p.Requester.Info(), p.Responder.Info(), reqRes, respRes)
	if !p.ran {
		res.Connect = p.connectStats(spec)
	}
	p.ran = true
	return res, nil
}

func (p *Pair) connectStats(spec Test) *ConnectStats {
	return NewConnectStats(p.Requester.CMTimes(), p.Requester.CMElapsed(), spec.ConnectParallel)
}

// connectResult is a measure connect run's result: the set-up of the
// connections the pair was made with, which only a new pair repeats.
func (p *Pair) connectResult(spec Test) (*Result, error) {
	if p.ran {
		return nil, errors.New("rdma: a measure connect run needs a newly connected pair; this one reported its connections already")
	}
	c := p.connectStats(spec)
	if c == nil {
		return nil, errors.New("rdma: measure connect on a pair not connected through the CM")
	}
	p.ran = true
	spec.QP = p.Requester.Attrs()
	return &Result{Spec: spec, Requester: p.Requester.Info(), Responder: p.Responder.Info(), Elapsed: c.Elapsed, Connect: c, Sides: []SideSummary{}}, nil
}
