package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"net/netip"
	"time"

	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// Target is where a scenario's runs execute: two endpoints in this
// process, or this host against `rdmarun serve`.
type Target interface {
	Run(ctx context.Context, spec rdma.Test) (*rdma.Result, error)
	// LinkGbps is the local port's rate, for thresholds such as
	// bw_gbps >= 0.9 * link_gbps.
	LinkGbps() float64
	Describe() string
	Close() error
}

// Endpoint names a device, port and GID.
type Endpoint struct {
	Device   string
	Port     int
	GIDIndex int // rdma.AutoGIDIndex chooses
}

// Loopback runs both ends in this process. It keeps one connected pair
// while consecutive runs need the same endpoints (the buffers are sized
// for the largest message of the scenario, so a size sweep reuses them).
type Loopback struct {
	Local, Peer Endpoint
	MaxMessage  int
	pair        *rdma.Pair
	cfgA, cfgB  rdma.EndpointConfig
	attrs       rdma.QPAttrs
	via         rdma.Connect // how pair was connected
}

// Run implements Target.
func (l *Loopback) Run(ctx context.Context, spec rdma.Test) (*rdma.Result, error) {
	if spec.Multicast != "" {
		return l.runMulticast(ctx, spec.WithGroup())
	}
	sized := spec
	sized.Size = max(spec.Size, l.MaxMessage)
	a, b := rdma.PairConfig(sized,
		rdma.EndpointConfig{Device: l.Local.Device, Port: l.Local.Port, GIDIndex: l.Local.GIDIndex},
		rdma.EndpointConfig{Device: l.Peer.Device, Port: l.Peer.Port, GIDIndex: l.Peer.GIDIndex})
	// A pair connected through the CM is made anew for every run, so
	// that every run's set-up is measured, and an exchange run never
	// reuses one.
	if l.pair == nil || a != l.cfgA || b != l.cfgB || spec.QP != l.attrs || spec.Connect == rdma.ConnectCM || l.via != spec.Connect {
		if err := l.Close(); err != nil {
			return nil, err
		}
		p, err := l.connect(spec, a, b)
		if err != nil {
			return nil, err
		}
		l.pair, l.cfgA, l.cfgB, l.attrs, l.via = p, a, b, spec.QP, spec.Connect
	}
	return l.pair.Run(ctx, spec)
}

// runMulticast sends spec to its group from the local device, received
// on the peer device, each endpoint made and joined for the run.
func (l *Loopback) runMulticast(ctx context.Context, spec rdma.Test) (_ *rdma.Result, err error) {
	group, err := netip.ParseAddr(spec.Multicast)
	if err != nil {
		return nil, err
	}
	endpoint := func(end Endpoint) (*rdma.Endpoint, error) {
		return rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: end.Device, Port: end.Port, GIDIndex: end.GIDIndex}))
	}
	rx, err := endpoint(l.Peer)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, rx.Close()) }()
	tx, err := endpoint(l.Local)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, tx.Close()) }()
	// The receiver joins first, so the group has a member to hear the
	// sender's first message.
	if err := rx.JoinMulticast(group, false, spec.QP, cmStepTimeout); err != nil {
		return nil, err
	}
	if err := tx.JoinMulticast(group, true, spec.QP, cmStepTimeout); err != nil {
		return nil, err
	}
	res, err := rdma.RunMulticast(ctx, spec, tx, []*rdma.Endpoint{rx})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// connect makes the pair the way spec connects.
func (l *Loopback) connect(spec rdma.Test, a, b rdma.EndpointConfig) (*rdma.Pair, error) {
	if spec.Connect == rdma.ConnectCM {
		return rdma.NewCMPair(a, b, spec.QP, cmStepTimeout, spec.ConnectParallel)
	}
	return rdma.NewLoopbackPair(a, b, spec.QP)
}

// cmStepTimeout bounds each CM step of a loopback pair, as a session's
// step bounds a remote one's.
const cmStepTimeout = 10 * time.Second

// LinkGbps implements Target.
func (l *Loopback) LinkGbps() float64 { return linkGbps(l.Local) }

// Describe implements Target.
func (l *Loopback) Describe() string {
	return "loopback " + l.Local.Device + " -> " + l.Peer.Device
}

// Close frees the pair.
func (l *Loopback) Close() error {
	if l.pair == nil {
		return nil
	}
	err := l.pair.Close()
	l.pair = nil
	return err
}

// Remote runs each test against `rdmarun serve`, over a new control
// connection and new QPs each time, as separate CI jobs would.
type Remote struct {
	Addr       string
	Local      Endpoint
	PeerDevice string
	PeerGID    *int
	Token      string
	TLS        *tls.Config
}

// Run implements Target.
func (r *Remote) Run(ctx context.Context, spec rdma.Test) (*rdma.Result, error) {
	cfg := peer.ClientConfig{
		Addr: r.Addr, Token: r.Token, TLS: r.TLS,
		Device: r.Local.Device, Port: r.Local.Port, GIDIndex: r.Local.GIDIndex,
		PeerDevice: r.PeerDevice, PeerGIDIndex: r.PeerGID,
	}
	if spec.Multicast != "" {
		return peer.RunMulticast(ctx, cfg, append([]string{r.Addr}, spec.Receivers...), spec)
	}
	return peer.Run(ctx, cfg, spec)
}

// LinkGbps implements Target.
func (r *Remote) LinkGbps() float64 { return linkGbps(r.Local) }

// Describe implements Target.
func (r *Remote) Describe() string { return r.Addr }

// Close implements Target; a remote target holds nothing between runs.
func (r *Remote) Close() error { return nil }

// linkGbps reads the port's rate, or 0 when it cannot be read (a
// threshold on link_gbps then fails, rather than passing by accident).
func linkGbps(e Endpoint) float64 {
	devs, err := rdma.Devices()
	if err != nil {
		return 0
	}
	for _, d := range devs {
		if d.Name != e.Device {
			continue
		}
		port := e.Port
		if port == 0 {
			port = 1
		}
		if p, err := d.Port(port); err == nil {
			return p.RateGbps
		}
	}
	return 0
}

// ErrNoRuns is returned for a scenario that expands to nothing.
var ErrNoRuns = errors.New("runner: the scenario has no runs")
