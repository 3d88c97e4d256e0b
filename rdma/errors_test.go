package rdma

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/portstats"
)

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&VerbsError{Op: "ibv_reg_mr", Device: "rxe0", Errno: syscall.ENOMEM},
			"ibv_reg_mr on rxe0: cannot allocate memory (errno 12); the locked-memory limit is probably too low (ulimit -l, or LimitMEMLOCK=infinity in a systemd unit)"},
		{&VerbsError{Op: "ibv_create_cq", Device: "siw1"},
			"ibv_create_cq on siw1: failed, and the provider library set no errno (its own debug output, where it has one, says why)"},
		{&VerbsError{Op: "ibv_modify_qp(RTR)", Device: "mlx5_0", Errno: syscall.EINVAL},
			"ibv_modify_qp(RTR) on mlx5_0: invalid argument (errno 22)"},
		{&CompletionError{Status: WCRetryExcErr, Description: "transport retry counter exceeded", QPN: 0x11, Device: "rxe1", Iteration: 42},
			"completion error RETRY_EXC_ERR (status 12: transport retry counter exceeded, vendor_err 0x0) on rxe1 QP 0x000011 at iteration 42; likely cause: the peer did not acknowledge: peer QP not in RTS, wrong QPN or GID, or the link is down or dropping packets"},
		{&CompletionError{Status: WCRetryExcErr, Description: "transport retry counter exceeded", QPN: 0x11, Device: "rxe1",
			Loss: &PathLoss{Device: "rxe1", SeqErrors: 412, Retransmits: 380, RetryCnt: 6}},
			"completion error RETRY_EXC_ERR (status 12: transport retry counter exceeded, vendor_err 0x0) on rxe1 QP 0x000011 at iteration 0; likely cause: the path is dropping packets and the peer was answering: rxe1 counted 412 packet sequence errors (NAKs for lost packets) and 380 retransmits during the run, and the transport gave up after retry_cnt 6 retries with no ACK between them (soft-RoCE counts every NAK); find the loss (tc qdisc, cabling, switch or NIC drops), or set retry_cnt 7 (forever on soft-RoCE) to measure through it"},
		{&CompletionError{Status: WCWRFlushErr, Device: "mlx5_0", Loss: &PathLoss{Device: "mlx5_0", SeqErrors: 3, RetryCnt: 6}},
			"completion error WR_FLUSH_ERR (status 5, vendor_err 0x0) on mlx5_0 QP 0x000000 at iteration 0; likely cause: the QP went to the error state after an earlier failure; look at the first error; mlx5_0 counted 3 packet sequence errors (NAKs for lost packets) during the run"},
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
		{&StallError{Waited: time.Minute, Waiting: "send completions", Device: "rxe1", Quiet: 5 * time.Second, Limit: time.Minute,
			PortCounter: "hw_counters/rcvd_pkts", Extended: 11, Window: 100 * 64 << 10, CQModeration: 100,
			Loss: &PathLoss{Device: "rxe1", SeqErrors: 2210, Retransmits: 2301, RetryCnt: 7}},
			"stalled: nothing completed for 1m0s while waiting for send completions on rxe1 at iteration 0, though the port kept receiving (hw_counters/rcvd_pkts moved in each of 11 windows of 5s); a wait may last 1m0s (12 windows); the path is dropping packets and the peer was answering: rxe1 counted 2210 packet sequence errors (NAKs for lost packets) and 2301 retransmits during the run, so the transport was resending what was lost; find the loss (tc qdisc, cabling, switch or NIC drops), or lower cq_moderation to measure through it: 6 MiB of messages go between signalled completions (cq_moderation 100)"},
		{&StallError{Waited: 5 * time.Second, Waiting: "send completions", Device: "rxe1", Quiet: 5 * time.Second, Limit: time.Minute,
			PortCounter: "hw_counters/rcvd_pkts", Loss: &PathLoss{Device: "rxe1", SeqErrors: 9, RetryCnt: 7}},
			"stalled: nothing completed for 5s while waiting for send completions on rxe1 at iteration 0, and the port received nothing for the last 5s (stall_timeout, or two ACK timeouts where longer): the path was dropping packets (rxe1 counted 9 packet sequence errors (NAKs for lost packets) during the run), then went quiet: peer gone, link down, or every packet dropped"},
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

// TestPathLoss: sequence errors are evidence of a lossy path only when
// there are enough of them to have exhausted retry_cnt and they drove most
// retries; a port without the counter, or a run whose counters were not
// read, gives none.
func TestPathLoss(t *testing.T) {
	cats := func(v map[string]uint64) portstats.Deltas {
		return portstats.Deltas{Categories: &portstats.Categories{Driver: "rxe", Values: v}}
	}
	for _, tc := range []struct {
		name string
		d    portstats.Deltas
		want *PathLoss
	}{
		{"NAKs and retransmits", cats(map[string]uint64{portstats.SeqErrors: 7, portstats.Retransmits: 9}),
			&PathLoss{Device: "rxe1", SeqErrors: 7, Retransmits: 9, RetryCnt: 6}},
		{"NAKs only", cats(map[string]uint64{portstats.SeqErrors: 6}), &PathLoss{Device: "rxe1", SeqErrors: 6, RetryCnt: 6}},
		{"5% loss", cats(map[string]uint64{portstats.SeqErrors: 204, portstats.Retransmits: 207}),
			&PathLoss{Device: "rxe1", SeqErrors: 204, Retransmits: 207, RetryCnt: 6}},
		{"retransmits to a silent peer", cats(map[string]uint64{portstats.SeqErrors: 0, portstats.Retransmits: 7}), nil},
		{"a killed peer's last NAK", cats(map[string]uint64{portstats.SeqErrors: 1, portstats.Retransmits: 5}), nil},
		{"fewer NAKs than retry_cnt", cats(map[string]uint64{portstats.SeqErrors: 5}), nil},
		{"mostly timeouts", cats(map[string]uint64{portstats.SeqErrors: 6, portstats.Retransmits: 13}), nil},
		{"no sequence counter", cats(map[string]uint64{portstats.Retransmits: 7}), nil},
		{"not read", portstats.Deltas{}, nil},
	} {
		got := pathLoss("rxe1", tc.d, 6)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
