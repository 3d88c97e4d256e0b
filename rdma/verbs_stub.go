//go:build !linux || !cgo || nordma

package rdma

// Devices needs libibverbs; this build has none.
func Devices() ([]Device, error) { return nil, ErrNotSupported }

// Endpoint needs libibverbs; this build has none.
type Endpoint struct{}

// NewEndpoint needs libibverbs; this build has none.
func NewEndpoint(EndpointConfig) (*Endpoint, error) { return nil, ErrNotSupported }

// Info returns nothing in this build.
func (*Endpoint) Info() EndpointInfo { return EndpointInfo{} }

// Connect needs libibverbs; this build has none.
func (*Endpoint) Connect(EndpointInfo, QPAttrs) error { return ErrNotSupported }

// Fail needs libibverbs; this build has none.
func (*Endpoint) Fail() error { return ErrNotSupported }

// Close has nothing to free in this build.
func (*Endpoint) Close() error { return nil }

// SideRun needs libibverbs; this build has none.
type SideRun struct{}

// Prepare needs libibverbs; this build has none.
func (*Endpoint) Prepare(TestSpec, int, Role, EndpointInfo) (*SideRun, error) {
	return nil, ErrNotSupported
}

// Start does nothing in this build.
func (*SideRun) Start() {}

// Exited is always closed in this build.
func (*SideRun) Exited() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// MarkPeerFinished does nothing in this build.
func (*SideRun) MarkPeerFinished() {}

// Stop does nothing in this build.
func (*SideRun) Stop() {}

// Result needs libibverbs; this build has none.
func (*SideRun) Result() (*SideResult, error) { return nil, ErrNotSupported }

// Close does nothing in this build.
func (*SideRun) Close() {}

// Failed is always true in this build.
func (*SideRun) Failed() bool { return true }

// SendersFinished is always closed in this build.
func (*SideRun) SendersFinished() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Attrs returns nothing in this build.
func (*Endpoint) Attrs() QPAttrs { return QPAttrs{} }

// HasWorkers is always false in this build.
func (*SideRun) HasWorkers() bool { return false }
