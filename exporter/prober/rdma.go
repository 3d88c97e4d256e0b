package prober

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// Peer is where a probe goes: the address of a target's responder, how
// to reach it, and from which local device. It is comparable, so jobs can
// be compared for a change.
type Peer struct {
	Addr   string // host:port
	Device string // local RDMA device; empty: the exporter's default
	// TLS is the client side of a responder that serves TLS; the zero
	// value dials plain TCP.
	TLS ctrl.TLSConfig
}

// Transport runs one test against a peer: peer.Run against a remote
// responder in the exporter, a fake in tests of the logic above it.
type Transport func(ctx context.Context, p Peer, spec rdma.TestSpec) (*rdma.Result, error)

// ProbeRDMA runs spec against target within timeout and records the
// outcome under k. A dead target costs at most timeout: the engine's own
// stall deadline is set below it, so the verbs loop gives up first and
// frees its QPs, and the context ends whatever is left (the control
// channel).
func ProbeRDMA(ctx context.Context, tr Transport, m *Metrics, k Key, p Peer, spec rdma.TestSpec, timeout time.Duration) error {
	if limit := rdma.Duration(timeout / 2); spec.StallTimeout == 0 || spec.StallTimeout > limit {
		spec.StallTimeout = limit
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := tr(ctx, p, spec)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w after %v: %w", errTimeout, timeout, err)
	}
	m.Record(k, res, err, time.Since(start), time.Now())
	return err
}
