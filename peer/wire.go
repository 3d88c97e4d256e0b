// Package peer runs a test between two hosts: the client side (rdmarun
// with a remote peer) and the responder daemon (rdmarun serve, and the
// responder inside rdmarun_exporter). The client pushes the whole test spec,
// so the responder needs no per-test settings; both ends exchange endpoint
// info over the control channel (package ctrl), start together, relay
// "my senders are done", and the responder sends its side's result back.
//
// A relayed test (RunVia) lets a coordinator run a test between two
// responders without carrying its traffic:
//
//	coordinator -> A  relay         {version, spec, A's device, B: {addr, device}}
//	A -> coordinator  relay-ok      {version, device, within: A's bound on the answer}
//	                  A runs the test as a client against B (Run), with its own token and TLS
//	A -> coordinator  relay-result  {result with both sides and samples, A's port rate, or error: {stage, addr, unreachable, ...}}
//	coordinator -> A  bye
//
// The relay payload carries its own version (RelayVersion); a responder
// answers another version, or a kind it does not know, with an error
// frame that names the version it speaks. While A's test runs, anything
// from the coordinator, or its connection closing, stops the test.
package peer

import (
	"errors"
	"fmt"

	"github.com/rdmarun/rdmarun/rdma"
)

// specMsg asks the responder to set up its side of a test.
type specMsg struct {
	// Spec is the client's complete test, every setting given; the
	// responder completes it again, which checks it.
	Spec rdma.TestSpec `json:"spec"`
	// Device on the responder; empty: its default.
	Device   string `json:"device,omitempty"`
	GIDIndex *int   `json:"gid_index,omitempty"`
	// KeepMS asks the responder to keep the session for this long
	// between runs (Session); absent or 0, it serves one run. A responder
	// from before sessions ignores it and serves one.
	KeepMS int64 `json:"keep_ms,omitempty"`
	// NoCounters: the client wants no counter deltas, so the responder
	// need not read its port's counters around each run.
	NoCounters bool `json:"no_counters,omitempty"`
	// Folded asks to run a kept session folded (foldable): the responder
	// prepares each next run as it answers a result, so the client starts
	// it without waiting for Start, and a run that succeeds on both ends
	// exchanges no Done. A responder from before folding ignores it.
	Folded bool `json:"folded,omitempty"`
}

// specOKMsg names what the responder chose.
type specOKMsg struct {
	Device string `json:"device"`
	// KeepMS is how long the responder keeps the session between runs:
	// at most what was asked; 0 for one run.
	KeepMS int64 `json:"keep_ms,omitempty"`
	// Folded: the responder runs the session folded, as asked.
	Folded bool `json:"folded,omitempty"`
	// CM, for a spec with connect: rdma_cm, is where and how the client
	// connects its QPs. A responder from before the CM sends none.
	CM *cmOffer `json:"cm,omitempty"`
}

// endpointMsg carries what EndpointInfo keeps out of reports: the PSNs,
// the buffer address and the rkey, which only the peer may see.
type endpointMsg struct {
	Info   rdma.EndpointInfo `json:"info"`
	PSNs   []uint32          `json:"psns"`
	RKey   uint32            `json:"rkey"`
	Addr   uint64            `json:"addr"`
	Stride uint64            `json:"stride"`
}

func toWire(i rdma.EndpointInfo) endpointMsg {
	return endpointMsg{Info: i, PSNs: i.PSNs, RKey: i.RKey, Addr: i.Addr, Stride: i.Stride}
}

func (m endpointMsg) info() rdma.EndpointInfo {
	i := m.Info
	i.PSNs, i.RKey, i.Addr, i.Stride = m.PSNs, m.RKey, m.Addr, m.Stride
	return i
}

// resultMsg is the responder's side of the result, or why it failed.
type resultMsg struct {
	Side  *rdma.SideResult `json:"side,omitempty"`
	Error string           `json:"error,omitempty"`
	// Stopped: the responder only stopped because the client failed or
	// went away; its error explains nothing.
	Stopped bool `json:"stopped,omitempty"`
	// Timeout: the responder's side failed as a dead path does (a stall
	// or a connect that timed out), so the client counts it as a timeout.
	Timeout bool `json:"timeout,omitempty"`
	// Next (folded sessions): the responder has prepared the next run,
	// its receives posted, so the client may start it on its Ready alone.
	Next bool `json:"next,omitempty"`
}

// RelayVersion is the version of the relay messages (relayMsg and its
// answers). A responder answers a request of another version with an
// error that names both, never by dropping it.
const RelayVersion = 1

// relayMsg asks a responder (A) to run Spec itself, as a client, against
// the responder at Peer (B), and to send back the whole result.
type relayMsg struct {
	Version int           `json:"version"`
	Spec    rdma.TestSpec `json:"spec"`
	// Device and GIDIndex on A; empty / nil: A's own settings.
	Device   string    `json:"device,omitempty"`
	GIDIndex *int      `json:"gid_index,omitempty"`
	Peer     relayPeer `json:"peer"`
}

// relayPeer is B, as A dials it.
type relayPeer struct {
	Addr     string `json:"addr"`
	Device   string `json:"device,omitempty"`
	GIDIndex *int   `json:"gid_index,omitempty"`
}

// relayOKMsg accepts a relay: A's device, and how long A may take at most
// to answer (its own limit on one test), which bounds the coordinator's
// wait.
type relayOKMsg struct {
	Version int           `json:"version"`
	Device  string        `json:"device"`
	Within  rdma.Duration `json:"within"`
}

// relayResultMsg is A's answer: the result of its test against B, or
// where and why it failed. A latency result's samples travel in it, as
// its buckets (rdma.LatencyStats.Buckets), so a relayed result plots,
// compares and exports like a local one.
type relayResultMsg struct {
	Result *rdma.Result  `json:"result,omitempty"`
	Error  *relayFailure `json:"error,omitempty"`
	// LinkGbps is the rate of A's port, the requester's, which is what
	// link_gbps means in a threshold: the coordinator runs no RDMA and
	// cannot read it. 0 when A could not read it, and from a responder
	// of a release before it was carried (the field is new within relay
	// version 1: an older coordinator ignores it).
	LinkGbps float64 `json:"link_gbps,omitempty"`
}

// result is the Result the message carries, once its latency buckets are
// known to hold the samples its summary counts: what reads the samples
// (a report's buckets, rdmarun compare) must see the run the summary
// describes.
func (m relayResultMsg) result() (*rdma.Result, error) {
	res := m.Result
	if res == nil {
		return nil, errors.New("no result and no error")
	}
	if l := res.Latency; l != nil {
		if l.RTT.Count < 0 {
			return nil, fmt.Errorf("the latency summary counts %d samples", l.RTT.Count)
		}
		want, left := uint64(l.RTT.Count), uint64(l.RTT.Count)
		for _, b := range l.Buckets {
			if b.Count > left {
				return nil, fmt.Errorf("the latency buckets hold more samples than the summary's %d", want)
			}
			left -= b.Count
		}
		if left != 0 {
			return nil, fmt.Errorf("the latency buckets hold %d samples, the summary %d", want-left, want)
		}
	}
	return res, nil
}

// relayFailure is RelayedError on the wire.
type relayFailure struct {
	Stage       Stage  `json:"stage,omitempty"`
	Addr        string `json:"addr,omitempty"`
	Msg         string `json:"message"`
	Unreachable bool   `json:"unreachable,omitempty"`
	Timeout     bool   `json:"timeout,omitempty"`
	Stopped     bool   `json:"stopped,omitempty"`
	// Setup is SetupRelay when A's own host set-up failed, SetupPeer
	// when B reported its own; empty otherwise, and from older relays.
	Setup string `json:"setup,omitempty"`
}
