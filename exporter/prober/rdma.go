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
	Device string // local RDMA device
	Port   int    // port of Device
	// TLS is the client side of a responder that serves TLS; the zero
	// value dials plain TCP.
	TLS ctrl.TLSConfig
}

// Transport runs one test against a peer: peer.Run against a remote
// responder in the exporter, a fake in tests of the logic above it.
type Transport func(ctx context.Context, p Peer, spec rdma.Test) (*rdma.Result, error)

// ProbeRDMA runs spec against target within timeout and records the
// outcome under k. The context ends at timeout whatever is left; the
// spec's own stall deadline, which the module set below the timeout
// (config.Module.Tests), lets the verbs loop give up first.
func ProbeRDMA(ctx context.Context, tr Transport, m *Metrics, k Key, p Peer, spec rdma.Test, timeout time.Duration) error {
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
