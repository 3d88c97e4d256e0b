//go:build !linux || !cgo || nordma

package rdma

import "context"

// Available reports whether this build can talk to RDMA devices.
const Available = false

// Devices needs libibverbs; this build has none.
func Devices() ([]Device, error) { return nil, ErrNotSupported }

// Endpoint needs libibverbs; this build has none.
type Endpoint struct{}

// NewEndpoint needs libibverbs; this build has none.
func NewEndpoint(EndpointConfig) (*Endpoint, error) { return nil, ErrNotSupported }

// Info returns nothing in this build.
func (*Endpoint) Info() EndpointInfo { return EndpointInfo{} }

// SendArea returns nothing in this build.
func (*Endpoint) SendArea(int) []byte { return nil }

// RecvArea returns nothing in this build.
func (*Endpoint) RecvArea(int) []byte { return nil }

// Connect needs libibverbs; this build has none.
func (*Endpoint) Connect(EndpointInfo, QPAttrs) error { return ErrNotSupported }

// Fail needs libibverbs; this build has none.
func (*Endpoint) Fail() error { return ErrNotSupported }

// Close has nothing to free in this build.
func (*Endpoint) Close() error { return nil }

// Pair needs libibverbs; this build has none.
type Pair struct {
	Requester, Responder *Endpoint
}

// PairConfig returns the configs unchanged in this build.
func PairConfig(_ TestSpec, requester, responder EndpointConfig) (EndpointConfig, EndpointConfig) {
	return requester, responder
}

// NewLoopbackPair needs libibverbs; this build has none.
func NewLoopbackPair(EndpointConfig, EndpointConfig, QPAttrs) (*Pair, error) {
	return nil, ErrNotSupported
}

// Close has nothing to free in this build.
func (*Pair) Close() error { return nil }

// Run needs libibverbs; this build has none.
func (*Pair) Run(context.Context, TestSpec) (*Result, error) { return nil, ErrNotSupported }
