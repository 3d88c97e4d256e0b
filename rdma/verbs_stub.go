//go:build !linux || !cgo || nordma

package rdma

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
func (*Endpoint) SendArea() []byte { return nil }

// RecvArea returns nothing in this build.
func (*Endpoint) RecvArea() []byte { return nil }

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

// NewLoopbackPair needs libibverbs; this build has none.
func NewLoopbackPair(EndpointConfig, EndpointConfig, QPAttrs) (*Pair, error) {
	return nil, ErrNotSupported
}

// Close has nothing to free in this build.
func (*Pair) Close() error { return nil }

// WriteLatency needs libibverbs; this build has none.
func (*Pair) WriteLatency(LatencyOptions) (*LatencyResult, error) { return nil, ErrNotSupported }
