package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/rdma"
)

// tokenTransport probes remote responders (prober.PeerTransport) with
// the token in force, which a reload may replace: the fleet's token is
// rotated with a reload, on the probes' side as on the responder's.
type tokenTransport struct {
	token *atomic.Pointer[string]
	// with is the transport that presents token.
	with func(token string) prober.Transport
}

func newTokenTransport(token string, logger *slog.Logger) tokenTransport {
	return tokenTransportWith(token, func(token string) prober.Transport { return prober.PeerTransport{Token: token, Logger: logger} })
}

func tokenTransportWith(token string, with func(string) prober.Transport) tokenTransport {
	t := tokenTransport{token: &atomic.Pointer[string]{}, with: with}
	t.set(token)
	return t
}

func (t tokenTransport) set(token string) { t.token.Store(&token) }

func (t tokenTransport) get() string { return *t.token.Load() }

// Open implements prober.Transport.
func (t tokenTransport) Open(p prober.Peer, spec rdma.Test, keep time.Duration) prober.Link {
	return &tokenLink{t: t, peer: p, spec: spec, keep: keep}
}

// tokenLink is a prober link that presents the token in force when it
// connects. A session kept from before a rotation goes on until its
// probe's outcome is recorded (Settle), and is closed then, off the
// probe's clock: the next probe connects with the new token.
type tokenLink struct {
	t     tokenTransport
	peer  prober.Peer
	spec  rdma.Test
	keep  time.Duration
	link  prober.Link // nil until the first probe, and after a rotation
	token string      // the token link presents
}

func (l *tokenLink) Probe(ctx context.Context) (*rdma.Result, time.Duration, error) {
	if l.link == nil {
		l.token = l.t.get()
		l.link = l.t.with(l.token).Open(l.peer, l.spec, l.keep)
	}
	return l.link.Probe(ctx)
}

func (l *tokenLink) Settle() {
	if l.link == nil {
		return
	}
	l.link.Settle()
	if l.t.get() != l.token {
		l.Close()
	}
}

func (l *tokenLink) Close() {
	if l.link != nil {
		l.link.Close()
		l.link = nil
	}
}
