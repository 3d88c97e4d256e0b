//go:build linux && cgo && !nordma

package rdma

/*
#include "shim.h"
*/
import "C"

// The Go numbers of ops, measures, roles and the histogram layout are
// written into, and read back from, C memory, so they must equal shim.h's
// or a run silently does another op or reads the wrong buckets. This
// function is never called: it does not compile unless each difference
// below is 0, because a constant index must lie inside the array.
func _() {
	var x [1]struct{}
	_ = x[OpSend-C.RR_SEND]
	_ = x[OpSendImm-C.RR_SEND_IMM]
	_ = x[OpWrite-C.RR_WRITE]
	_ = x[OpWriteImm-C.RR_WRITE_IMM]
	_ = x[OpRead-C.RR_READ]
	_ = x[OpFetchAdd-C.RR_FETCH_ADD]
	_ = x[OpCmpSwap-C.RR_CMP_SWAP]

	_ = x[MeasureLatency-C.RR_LATENCY]
	_ = x[MeasureBandwidth-C.RR_BANDWIDTH]

	_ = x[RC-C.RR_QPT_RC]
	_ = x[UC-C.RR_QPT_UC]
	_ = x[UD-C.RR_QPT_UD]
	_ = x[udGRHBytes-C.RR_GRH_BYTES]

	_ = x[RoleSend-C.RR_ROLE_SEND]
	_ = x[RoleRecv-C.RR_ROLE_RECV]

	_ = x[histSub-C.RR_HIST_SUB]
	_ = x[histMaxShift-C.RR_HIST_MAX_SHIFT]
	_ = x[histBuckets-C.RR_HIST_BUCKETS]
}
