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

// Transport opens links to peers: PeerTransport to remote responders in
// the exporter, RunFunc fakes in tests of the logic above it.
type Transport interface {
	// Open returns a link that probes p with spec. keep is how long the
	// link should keep its connection between probes (the caller probes
	// again within it); 0 for a single probe.
	Open(p Peer, spec rdma.Test, keep time.Duration) Link
}

// Link probes one peer with one spec, again and again.
type Link interface {
	// Probe runs one probe. setup is how long setting up a connection
	// took when this probe had to set one up (0 when it used the one
	// kept from before): it is recorded apart from the latency.
	Probe(ctx context.Context) (res *rdma.Result, setup time.Duration, err error)
	// Settle frees a connection the last probe ended (it failed, or the
	// responder keeps none). ProbeLink calls it once the probe's outcome
	// is recorded: a driver may take seconds to destroy the QPs of a
	// broken connection (rxe: ibv_destroy_qp took up to 2.5 s after the
	// link went down, measured in the testbed), and that is not the
	// probe's time. It is done before the link's next probe starts.
	Settle()
	// Close frees the connection kept, if any.
	Close()
}

// RunFunc is a Transport whose every probe is a run of its own, with
// nothing kept between probes.
type RunFunc func(ctx context.Context, p Peer, spec rdma.Test) (*rdma.Result, error)

// Open implements Transport.
func (f RunFunc) Open(p Peer, spec rdma.Test, _ time.Duration) Link {
	return runLink{f, p, spec}
}

type runLink struct {
	run  RunFunc
	peer Peer
	spec rdma.Test
}

func (l runLink) Probe(ctx context.Context) (*rdma.Result, time.Duration, error) {
	res, err := l.run(ctx, l.peer, l.spec)
	return res, 0, err
}

func (runLink) Settle() {}

func (runLink) Close() {}

// ProbeRDMA runs spec against target once, on a link of its own, within
// timeout and records the outcome under k: the /probe endpoint's probe.
func ProbeRDMA(ctx context.Context, tr Transport, m *Metrics, k Key, p Peer, spec rdma.Test, timeout time.Duration) error {
	l := tr.Open(p, spec, 0)
	defer l.Close()
	_, err := ProbeLink(ctx, l, m, k, timeout)
	return err
}

// ProbeLink runs one probe on l within timeout, records the outcome under
// k, then settles the link; took is the probe's recorded duration. The
// context ends at timeout whatever is left; the spec's own stall
// deadline, which the module set below the timeout (config.Module.Tests),
// lets the verbs loop give up first.
//
// The outcome is recorded by the deadline (and a grace for the probe's
// own return) even when the probe has not returned: a run stopped at its
// deadline waits for its worker, and in the testbed a worker's verbs call
// waited up to 2.5 s while another session's QP was being destroyed after
// the link went down. ProbeLink still waits for the probe before it
// returns, so the link is never probed twice at once.
func ProbeLink(ctx context.Context, l Link, m *Metrics, k Key, timeout time.Duration) (took time.Duration, err error) {
	defer l.Settle()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	type outcome struct {
		res   *rdma.Result
		setup time.Duration
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		res, setup, err := l.Probe(pctx)
		done <- outcome{res, setup, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-pctx.Done():
		select {
		case o = <-done:
		case <-time.After(returnGrace):
			o.err = fmt.Errorf("the run had not ended %v after it was stopped: %w", returnGrace, pctx.Err())
			defer func() { <-done }()
		}
	}
	took = time.Since(start)
	err = o.err
	if err != nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w after %v: %w", errTimeout, timeout, err)
	}
	if o.setup > 0 {
		m.RecordConnect(k, o.setup)
	}
	m.Record(k, o.res, err, took, time.Now())
	return took, err
}

// returnGrace is how long past its deadline a probe may take to return
// before its timeout is recorded without it: a stopped run ends within
// one event-mode poll slice (100 ms) when nothing blocks its worker.
const returnGrace = 200 * time.Millisecond
