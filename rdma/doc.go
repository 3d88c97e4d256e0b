// Package rdma is the verbs core of rdmarun and rdmarun_exporter: device
// discovery, endpoints (PD, MR, CQ, QP) and the measured loops.
//
// A test is given as a TestSpec, whose zero fields (and nil QP settings)
// mean "the default". TestSpec.Complete is the one place defaults are
// filled in and the combination checked; it returns a Test, the only form
// Pair.Run, Endpoint.Prepare and the peer package accept, and the form
// results record.
//
// The files that import "C" are split by job: verbs_linux.go (the cgo
// flags and verbs error helpers), devices_linux.go (what libibverbs says
// about each device), endpoint_linux.go (an endpoint's verbs objects and
// their connection), siderun_linux.go (one side of a test: its life and
// the coordination of the two sides), crun_linux.go (the C memory a run
// is laid out in and read back from), enums_linux.go (which fails to
// build if Go's numbers leave shim.h's), and four files that connect an
// endpoint's QPs through the RDMA connection manager, librdmacm, instead
// of by exchange (cm.c and cm.h their C side): cm_linux.go (the event
// channel and what both ends share), cmdial_linux.go (the connecting
// end), cmlisten_linux.go (the listener and the accepting end) and
// cmroute_linux.go (resolving a route, connecting nothing). Builds
// without libibverbs (other operating systems, CGO_ENABLED=0, or the
// nordma tag) compile verbs_stub.go instead, whose functions return
// ErrNotSupported, so every package above this one still builds and its
// own tests still run.
// pair.go, side.go (roles, linking two sides in one process),
// sideresult.go, pattern.go (the validation pattern) and cm.go (the CM's
// events, times and errors) need no C and serve both builds.
//
// Measured loops run entirely in C, one cgo call per run, writing into a
// sample array allocated before the call: crossing cgo costs far more
// than one RDMA operation on real hardware, so it must not happen per
// operation.
package rdma
