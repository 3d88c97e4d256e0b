package prober

import (
	"context"
	"log/slog"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// PeerTransport probes remote responders (peer.Dial), presenting token,
// each probe's steps logged to log at debug level.
type PeerTransport struct {
	Token  string
	Logger *slog.Logger
}

// Open implements Transport.
func (t PeerTransport) Open(p Peer, spec rdma.Test, keep time.Duration) Link {
	return &peerLink{t: t, peer: p, spec: spec, keep: keep}
}

// peerLink keeps one session to a responder between probes, when the
// responder agrees to keep it, so that a probe costs its round trips
// only, not a control connection, a handshake and QPs set up and torn
// down. A probe on a session that can no longer run (the responder
// restarted, or the session idled out) sets up a new one; a probe that
// fails ends its session, which Settle closes, so the next starts clean.
type peerLink struct {
	t     PeerTransport
	peer  Peer
	spec  rdma.Test
	keep  time.Duration
	s     *peer.Session
	ended bool // the last probe ended s: Settle closes it
}

func (l *peerLink) Probe(ctx context.Context) (*rdma.Result, time.Duration, error) {
	if l.s != nil && (l.ended || !l.s.Usable()) {
		l.Close()
	}
	var setup time.Duration
	if l.s == nil {
		s, err := l.dial(ctx)
		if err != nil {
			return nil, 0, err
		}
		// No warm-up run of its own: the spec's warm-up round trips,
		// which every run makes before the measured ones, take the first
		// touches of new QPs, and a second run would double the first
		// probe's time against its timeout.
		setup = s.Setup()
		l.s = s
	}
	res, err := l.s.Run(ctx)
	l.ended = err != nil || l.s.Idle() == 0
	return res, setup, err
}

func (l *peerLink) dial(ctx context.Context) (*peer.Session, error) {
	p := l.peer
	if p.Device == "" {
		return nil, rdma.ErrNoDevice
	}
	cc := peer.ClientConfig{Addr: p.Addr, Token: l.t.Token, Device: p.Device, Port: p.Port, GIDIndex: rdma.AutoGIDIndex, StepTimeout: 5 * time.Second, Logger: l.t.Logger,
		// The port collector exports the counters; a delta per probe
		// would only cost both ends two reads of every counter file.
		SkipPortCounters: true}
	if p.TLS != (ctrl.TLSConfig{}) {
		// Read at every connection, so renewed certificates take effect
		// without a reload.
		tlsCfg, err := p.TLS.ClientConfig()
		if err != nil {
			return nil, err
		}
		cc.TLS = tlsCfg
	}
	return peer.Dial(ctx, cc, l.spec, l.keep)
}

func (l *peerLink) Settle() {
	if !l.ended || l.s == nil {
		return
	}
	start := time.Now()
	l.Close()
	if l.t.Logger != nil {
		l.t.Logger.Debug("session closed", "target", l.peer.Addr, "took", time.Since(start))
	}
}

func (l *peerLink) Close() {
	if l.s != nil {
		l.s.Close()
		l.s = nil
	}
	l.ended = false
}
