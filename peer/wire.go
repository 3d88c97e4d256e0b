// Package peer runs a test between two hosts: the client side (rdmarun
// with a remote peer) and the responder daemon (rdmarun serve, and the
// responder inside rdmarun_exporter). The client pushes the whole test spec,
// so the responder needs no per-test settings; both ends exchange endpoint
// info over the control channel (package ctrl), start together, relay
// "my senders are done", and the responder sends its side's result back.
package peer

import (
	"github.com/rdmarun/rdmarun/rdma"
)

// DefaultPort is where rdmarun serve listens unless told otherwise.
const DefaultPort = "18520"

// specMsg asks the responder to set up its side of a test.
type specMsg struct {
	// Spec is the client's complete test, every setting given; the
	// responder completes it again, which checks it.
	Spec rdma.TestSpec `json:"spec"`
	// Device on the responder; empty: its default.
	Device   string `json:"device,omitempty"`
	GIDIndex *int   `json:"gid_index,omitempty"`
}

// specOKMsg names what the responder chose.
type specOKMsg struct {
	Device string `json:"device"`
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
}
