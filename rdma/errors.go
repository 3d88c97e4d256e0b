package rdma

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// ErrNotSupported is returned by every verbs call in a build without
// libibverbs (see verbs_stub.go).
var ErrNotSupported = errors.New("rdma: built without libibverbs (needs linux, cgo and libibverbs-dev; the nordma tag disables it)")

// ErrNoDevice means libibverbs found no RDMA device at all.
var ErrNoDevice = errors.New("rdma: no RDMA device found")

// PortDownError means the local port is not ACTIVE, so nothing was sent:
// a cable, a switch port or (on RoCE) the netdev is down. Callers that
// count failures keep it apart from an unanswered peer.
type PortDownError struct {
	Device string
	Port   int
	State  string // as the kernel names it, e.g. DOWN, INIT
}

func (e *PortDownError) Error() string {
	return fmt.Sprintf("rdma: %s port %d is %s, not ACTIVE (check the link and `rdma link show`)", e.Device, e.Port, e.State)
}

// VerbsError is a failed verbs call. Errno keeps the kernel's answer so
// callers can tell ENOMEM (memlock limit) from EINVAL (bad attribute).
type VerbsError struct {
	Op     string // the verbs call, e.g. "ibv_reg_mr"
	Device string
	Errno  syscall.Errno
}

func (e *VerbsError) Error() string {
	dev := ""
	if e.Device != "" {
		dev = " on " + e.Device
	}
	if e.Errno == 0 {
		return fmt.Sprintf("%s%s: failed, and the provider library set no errno (its own debug output, where it has one, says why)", e.Op, dev)
	}
	msg := fmt.Sprintf("%s%s: %v (errno %d)", e.Op, dev, e.Errno, int(e.Errno))
	if hint := errnoHint(e.Op, e.Errno); hint != "" {
		msg += "; " + hint
	}
	return msg
}

func (e *VerbsError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

func errnoHint(op string, errno syscall.Errno) string {
	switch {
	case errno == syscall.ENOMEM && op == "ibv_reg_mr":
		return "the locked-memory limit is probably too low (ulimit -l, or LimitMEMLOCK=infinity in a systemd unit)"
	case errno == syscall.EPERM || errno == syscall.EACCES:
		return "no permission on /dev/infiniband/uverbs*; run as root or add the user to the rdma group"
	case errno == syscall.ETIMEDOUT:
		return "the remote QP did not answer"
	}
	return ""
}

// WCStatus is a work completion status (enum ibv_wc_status).
type WCStatus int

// The statuses whose likely causes are worth naming; the others are
// rendered by number-to-name lookup only.
const (
	WCSuccess         WCStatus = 0
	WCLocLenErr       WCStatus = 1
	WCLocQPOpErr      WCStatus = 2
	WCLocProtErr      WCStatus = 4
	WCWRFlushErr      WCStatus = 5
	WCRemInvReqErr    WCStatus = 9
	WCRemAccessErr    WCStatus = 10
	WCRemOpErr        WCStatus = 11
	WCRetryExcErr     WCStatus = 12
	WCRNRRetryExcErr  WCStatus = 13
	WCFatalErr        WCStatus = 19
	WCRespTimeoutErr  WCStatus = 20
	WCGeneralErr      WCStatus = 21
	wcStatusNameCount          = 24
)

var wcStatusNames = [wcStatusNameCount]string{
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
	"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
	"REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR",
	"RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE",
}

// String returns the short name used in metrics labels and reports,
// e.g. "RETRY_EXC_ERR".
func (s WCStatus) String() string {
	if s >= 0 && int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("STATUS_%d", int(s))
}

// likelyCause is a one-line hint at what usually produces the status.
func (s WCStatus) likelyCause() string {
	switch s {
	case WCRemAccessErr:
		return "wrong rkey or remote address, or the remote MR lacks the access flag for this op"
	case WCRetryExcErr:
		return "the peer did not acknowledge: peer QP not in RTS, wrong QPN or GID, or the link is down or dropping packets"
	case WCRNRRetryExcErr:
		return "the peer had no receive posted (receiver not ready)"
	case WCWRFlushErr:
		return "the QP went to the error state after an earlier failure; look at the first error"
	case WCLocLenErr:
		return "the message is larger than the receive buffer or the port MTU allows"
	case WCLocProtErr:
		return "the local buffer is not inside a registered MR or its lkey is wrong"
	case WCRemInvReqErr:
		return "the peer rejected the request: op not allowed on its QP, or a length beyond its MR"
	case WCRemOpErr:
		return "the peer failed to carry out the operation"
	case WCLocQPOpErr:
		return "the local QP could not post or send this request (QP attributes or inline size; on soft-RoCE also the link going down as it was sent)"
	}
	return ""
}

// CompletionError is a work completion that came back with an error status.
type CompletionError struct {
	Status      WCStatus
	Description string // ibv_wc_status_str's text, when the verbs library was there to give it
	VendorErr   uint32
	Opcode      int // ibv_wc_opcode of the failed completion
	QPN         uint32
	Device      string
	Iteration   uint64 // the measured iteration it failed in (warm-up counts from 0 too)
	// Loss is the port counters' evidence of a lossy path during the
	// run; nil when they showed none or were not read.
	Loss *PathLoss
}

func (e *CompletionError) Error() string {
	msg := fmt.Sprintf("completion error %s (status %d", e.Status, int(e.Status))
	if e.Description != "" {
		msg += ": " + e.Description
	}
	msg += fmt.Sprintf(", vendor_err 0x%x) on %s QP 0x%06x at iteration %d", e.VendorErr, e.Device, e.QPN, e.Iteration)
	switch c := e.Status.likelyCause(); {
	case e.Loss != nil && e.Status == WCRetryExcErr:
		msg += "; likely cause: " + e.Loss.retryCause()
	case c != "":
		msg += "; likely cause: " + c
	}
	if e.Loss != nil && e.Status != WCRetryExcErr {
		msg += "; " + e.Loss.counted()
	}
	return msg
}

// StallError ends a run in which nothing completed within the stall
// deadline. The hardware retry machinery cannot be relied on to end such a
// run: soft-RoCE treats retry_cnt 7 as "retry forever", and on real NICs
// timeout x retry_cnt can be tens of seconds. A wait fails when nothing
// completed and the port received nothing for StallTimeout, or when
// nothing completed for Limit while the port kept receiving.
type StallError struct {
	Waited      time.Duration // how long the failed wait lasted
	Waiting     string        // what the loop was waiting for
	Device      string
	Iteration   uint64
	Quiet       time.Duration // how long the port may receive nothing (Test.StallWindow)
	Limit       time.Duration // the longest a wait may last while the port receives
	Extended    int           // windows the port's own progress added to the wait
	PortCounter string        // the port counter that tells slow from dead; "": none
	// Window is the bytes a bandwidth worker's QPs send between two
	// signalled WRs (cq_moderation x size x QPs); 0 for latency.
	Window       uint64
	CQModeration int
	// Loss is the port counters' evidence of a lossy path during the
	// run; nil when they showed none or were not read.
	Loss *PathLoss
}

func (e *StallError) Error() string {
	head := fmt.Sprintf("stalled: nothing completed for %v while waiting for %s on %s at iteration %d", e.Waited.Round(time.Millisecond), e.Waiting, e.Device, e.Iteration)
	if e.Extended > 0 && e.Waited >= e.Limit {
		// Slow, not silent: the port kept receiving to the end.
		msg := fmt.Sprintf("%s, though the port kept receiving (%s moved in each of %d windows of %v); a wait may last %v (%d windows)",
			head, e.PortCounter, e.Extended, e.Quiet, e.Limit, stallLimitFactor)
		if e.Loss != nil {
			msg += "; the path is dropping packets and the peer was answering: " + e.Loss.counted() + ", so the transport was resending what was lost; find the loss (tc qdisc, cabling, switch or NIC drops)"
			if e.Window > 0 {
				msg += fmt.Sprintf(", or lower cq_moderation to measure through it: %s of messages go between signalled completions (cq_moderation %d)", byteSize(e.Window), e.CQModeration)
			}
			return msg
		}
		if e.Window > 0 {
			msg += fmt.Sprintf("; %s of messages go between signalled completions (cq_moderation %d): lower cq_moderation or raise stall_timeout for a link this slow", byteSize(e.Window), e.CQModeration)
		}
		return msg
	}
	why := fmt.Sprintf(", and the port received nothing for the last %v (stall_timeout, or two ACK timeouts where longer)", e.Quiet)
	if e.PortCounter == "" {
		why = fmt.Sprintf(" (the stall window %v; this port has no receive counter to tell a slow link from a dead one)", e.Quiet)
	}
	if e.Loss != nil {
		return fmt.Sprintf("%s%s: the path was dropping packets (%s), then went quiet: peer gone, link down, or every packet dropped", head, why, e.Loss.counted())
	}
	return fmt.Sprintf("%s%s: peer gone, link down, or packets dropped with an unbounded retry count", head, why)
}

// byteSize writes n in the largest binary unit that divides it evenly
// enough to read: 800 MiB, 1.5 GiB, 4096 B.
func byteSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ValidationError means data came back different from what was sent.
type ValidationError struct {
	Op   Op
	QP   int // -1 when not known
	What string
}

func (e *ValidationError) Error() string {
	if e.QP < 0 {
		return fmt.Sprintf("data validation failed (%s): %s", e.Op, e.What)
	}
	return fmt.Sprintf("data validation failed (%s, QP %d): %s", e.Op, e.QP, e.What)
}
