package rdma

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&VerbsError{Op: "ibv_reg_mr", Device: "rxe0", Errno: syscall.ENOMEM},
			"ibv_reg_mr on rxe0: cannot allocate memory (errno 12); the locked-memory limit is probably too low (ulimit -l, or LimitMEMLOCK=infinity in a systemd unit)"},
		{&VerbsError{Op: "ibv_modify_qp(RTR)", Device: "mlx5_0", Errno: syscall.EINVAL},
			"ibv_modify_qp(RTR) on mlx5_0: invalid argument (errno 22)"},
		{&CompletionError{Status: WCRetryExcErr, Description: "transport retry counter exceeded", QPN: 0x11, Device: "rxe1", Iteration: 42},
			"completion error RETRY_EXC_ERR (status 12: transport retry counter exceeded, vendor_err 0x0) on rxe1 QP 0x000011 at iteration 42; likely cause: the peer did not acknowledge: peer QP not in RTS, wrong QPN or GID, or the link is down or dropping packets"},
		{&CompletionError{Status: 99, Device: "rxe1"},
			"completion error STATUS_99 (status 99, vendor_err 0x0) on rxe1 QP 0x000000 at iteration 0"},
		{&StallError{Waited: 2 * time.Second, Waiting: "the peer's write to arrive", Device: "rxe0", Iteration: 7,
			Quiet: 2 * time.Second, Limit: 24 * time.Second, PortCounter: "hw_counters/rcvd_pkts"},
			"stalled: nothing completed for 2s while waiting for the peer's write to arrive on rxe0 at iteration 7, and the port received nothing for the last 2s (stall_timeout, or two ACK timeouts where longer): peer gone, link down, or packets dropped with an unbounded retry count"},
		{&StallError{Waited: 7 * time.Second, Waiting: "send completions", Device: "rxe1", Iteration: 3,
			Quiet: 5 * time.Second, Limit: time.Minute, PortCounter: "hw_counters/rcvd_pkts", Extended: 1},
			"stalled: nothing completed for 7s while waiting for send completions on rxe1 at iteration 3, and the port received nothing for the last 5s (stall_timeout, or two ACK timeouts where longer): peer gone, link down, or packets dropped with an unbounded retry count"},
		{&StallError{Waited: 5 * time.Second, Waiting: "send completions", Device: "siw0", Quiet: 5 * time.Second, Limit: time.Minute},
			"stalled: nothing completed for 5s while waiting for send completions on siw0 at iteration 0 (the stall window 5s; this port has no receive counter to tell a slow link from a dead one): peer gone, link down, or packets dropped with an unbounded retry count"},
		{&StallError{Waited: time.Minute, Waiting: "send completions", Device: "rxe1", Quiet: 5 * time.Second, Limit: time.Minute,
			PortCounter: "hw_counters/rcvd_pkts", Extended: 11, Window: 100 * 16 << 20, CQModeration: 100},
			"stalled: nothing completed for 1m0s while waiting for send completions on rxe1 at iteration 0, though the port kept receiving (hw_counters/rcvd_pkts moved in each of 11 windows of 5s); a wait may last 1m0s (12 windows); 1.6 GiB of messages go between signalled completions (cq_moderation 100): lower cq_moderation or raise stall_timeout for a link this slow"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	if !errors.Is(&VerbsError{Op: "x", Errno: syscall.ENOMEM}, syscall.ENOMEM) {
		t.Error("VerbsError does not unwrap to its errno")
	}
}

func TestWCStatusNames(t *testing.T) {
	for s, want := range map[WCStatus]string{WCSuccess: "SUCCESS", WCRemAccessErr: "REM_ACCESS_ERR", WCRetryExcErr: "RETRY_EXC_ERR", WCRNRRetryExcErr: "RNR_RETRY_EXC_ERR", WCGeneralErr: "GENERAL_ERR", 23: "TM_RNDV_INCOMPLETE", -1: "STATUS_-1"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", int(s), s.String(), want)
		}
	}
}
