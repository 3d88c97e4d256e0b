package rdma

import (
	"context"
	"errors"
	"fmt"
)

// Pair is two endpoints in one process connected to each other: on two
// devices, or twice on one device. It needs nothing of C beyond what
// Endpoint and SideRun offer, so builds without libibverbs share it (and
// fail in NewLoopbackPair).
type Pair struct {
	Requester, Responder *Endpoint
}

// NewLoopbackPair creates both endpoints and connects them.
func NewLoopbackPair(requester, responder EndpointConfig, attrs QPAttrs) (*Pair, error) {
	a, err := NewEndpoint(requester)
	if err != nil {
		return nil, err
	}
	b, err := NewEndpoint(responder)
	if err != nil {
		a.Close()
		return nil, err
	}
	p := &Pair{Requester: a, Responder: b}
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
	return Assemble(spec, p.Requester.Info(), p.Responder.Info(), reqRes, respRes), nil
}
