// Package rdma is the verbs core of rdmarun and rdma_exporter: device
// discovery, endpoints (PD, MR, CQ, QP) and the measured loops.
//
// Only verbs_linux.go imports "C". Builds without libibverbs (other
// operating systems, CGO_ENABLED=0, or the nordma tag) compile
// verbs_stub.go instead, whose functions return ErrNotSupported, so every
// package above this one still builds and its own tests still run.
//
// Measured loops run entirely in C, one cgo call per run, writing into a
// sample array allocated before the call: crossing cgo costs far more
// than one RDMA operation on real hardware, so it must not happen per
// operation.
package rdma
