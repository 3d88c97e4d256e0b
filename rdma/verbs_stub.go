//go:build !linux || !cgo || nordma

package rdma

import (
	"net/netip"
	"time"
)

// This build has no libibverbs: what needs it returns ErrNotSupported,
// and the rest answers as for a side that has already exited.

// Devices needs libibverbs; this build has none.
func Devices() ([]Device, error) { return nil, ErrNotSupported }

// Endpoint needs libibverbs; this build has none.
type Endpoint struct{}

// NewEndpoint needs libibverbs; this build has none.
func NewEndpoint(EndpointConfig) (*Endpoint, error) { return nil, ErrNotSupported }

// Info returns nothing in this build.
func (*Endpoint) Info() EndpointInfo { return EndpointInfo{} }

// RegisteredBytes is 0 in this build: nothing is registered.
func (*Endpoint) RegisteredBytes() int64 { return 0 }

// Connect needs libibverbs; this build has none.
func (*Endpoint) Connect(EndpointInfo, QPAttrs) error { return ErrNotSupported }

// Attrs returns nothing in this build.
func (*Endpoint) Attrs() QPAttrs { return QPAttrs{} }

// Fail needs libibverbs; this build has none.
func (*Endpoint) Fail() error { return ErrNotSupported }

// Close has nothing to free in this build.
func (*Endpoint) Close() error { return nil }

// SideRun needs libibverbs; this build has none.
type SideRun struct{}

// Prepare needs libibverbs; this build has none.
func (*Endpoint) Prepare(Test, int, Role, EndpointInfo) (*SideRun, error) {
	return nil, ErrNotSupported
}

// Start does nothing in this build.
func (*SideRun) Start() {}

// SendersFinished is always closed in this build.
func (*SideRun) SendersFinished() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// MarkPeerFinished does nothing in this build.
func (*SideRun) MarkPeerFinished() {}

// Exited is always closed in this build.
func (*SideRun) Exited() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Failed is always true in this build.
func (*SideRun) Failed() bool { return true }

// HasWorkers is always false in this build.
func (*SideRun) HasWorkers() bool { return false }

// Stop does nothing in this build.
func (*SideRun) Stop() {}

// Result needs libibverbs; this build has none.
func (*SideRun) Result() (*SideResult, error) { return nil, ErrNotSupported }

// Close does nothing in this build.
func (*SideRun) Close() {}

// ConnectCM needs librdmacm; this build has none.
func (*Endpoint) ConnectCM(netip.AddrPort, func(int) []byte, QPAttrs, time.Duration, int) error {
	return ErrNotSupported
}

// AcceptCM needs librdmacm; this build has none.
func (*Endpoint) AcceptCM(*CMRequest, int, QPAttrs) error { return ErrNotSupported }

// AwaitCM needs librdmacm; this build has none.
func (*Endpoint) AwaitCM(QPAttrs, time.Time) error { return ErrNotSupported }

// CMElapsed returns nothing in this build.
func (*Endpoint) CMElapsed() time.Duration { return 0 }

// CMAddress needs librdmacm; this build has none.
func (*Endpoint) CMAddress() (netip.Addr, error) { return netip.Addr{}, ErrNotSupported }

// Transport is unknown in this build.
func (*Endpoint) Transport() Transport { return "" }

// Capable needs libibverbs; this build has none.
func (*Endpoint) Capable(Test) error { return ErrNotSupported }

// CMTimes returns nothing in this build.
func (*Endpoint) CMTimes() []CMTimes { return nil }

// CMListener needs librdmacm; this build has none.
type CMListener struct{}

// ListenCM needs librdmacm; this build has none.
func ListenCM(netip.AddrPort, int) (*CMListener, error) { return nil, ErrNotSupported }

// Addr returns nothing in this build.
func (*CMListener) Addr() netip.AddrPort { return netip.AddrPort{} }

// Next returns nothing in this build.
func (*CMListener) Next(time.Time) (*CMRequest, error) { return nil, ErrNotSupported }

// Close has nothing to free in this build.
func (*CMListener) Close() error { return nil }

// CMRequest is never made in this build.
type CMRequest struct {
	Private []byte
	Device  string
	Port    int
}

// Reject has nothing to refuse in this build.
func (*CMRequest) Reject([]byte) error { return nil }

// ResolveCM needs librdmacm; this build has none.
func ResolveCM(src, dst netip.Addr, _ time.Duration) (CMRoute, error) {
	return CMRoute{Src: src, Dst: dst}, ErrNotSupported
}

// MulticastQPN is the QP number a send to a multicast group names.
const MulticastQPN = 0xFFFFFF

// JoinMulticast needs librdmacm; this build has none.
func (*Endpoint) JoinMulticast(netip.Addr, bool, QPAttrs, time.Duration) error {
	return ErrNotSupported
}

// MulticastPeer needs libibverbs; this build has none.
func (*Endpoint) MulticastPeer() EndpointInfo { return EndpointInfo{} }

// QueryLimits needs libibverbs; this build has none.
func QueryLimits(string) (DeviceLimits, error) { return DeviceLimits{}, ErrNotSupported }
