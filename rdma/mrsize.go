package rdma

import "os"

// hugePage is the default huge page size on x86-64 and arm64.
const hugePage = 2 << 20

// slotBytes is the size of one area (send or receive) of a QP's slot:
// MaxMessage rounded up to a cache line, so no two areas share one.
func slotBytes(maxMessage int) int { return (maxMessage + 63) &^ 63 }

// RegisteredBytes is how much memory an endpoint with this configuration
// registers: two areas per QP, rounded up to whole pages, or to whole
// 2 MiB pages on huge pages. NewEndpoint sizes its buffer with it, so a
// responder that admits tests by it (rdmarun serve --max-memory) counts
// exactly what the endpoint will pin, not an estimate that could drift
// from it. The configuration is the one SpecConfig makes.
func (c EndpointConfig) RegisteredBytes() int64 {
	n := int64(2) * int64(slotBytes(c.MaxMessage+c.grhBytes())) * int64(c.QPs)
	if c.SharedRecv {
		// A send area per QP and one receive area for all.
		n = int64(slotBytes(c.MaxMessage+c.grhBytes())) * int64(c.QPs+1)
	}
	unit := int64(os.Getpagesize())
	if c.Hugepages {
		unit = hugePage
	}
	return (n + unit - 1) / unit * unit
}
