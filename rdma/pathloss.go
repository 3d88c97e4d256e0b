package rdma

import (
	"fmt"

	"github.com/rdmarun/rdmarun/portstats"
)

// PathLoss is what a port's counters said, over a run that failed, about
// packets lost on the path. A sequence error is the peer's NAK for a gap
// in what it received (or, at a responder, a request out of order): the
// peer was answering, so the run met a lossy path, not a dead peer. A
// transport that gives up there must not be reported as "the peer did not
// acknowledge" (soft-RoCE counts every NAK against retry_cnt and resets
// the count only on a positive ACK, so a few per cent of loss on
// multi-packet messages exhausts retry_cnt 6 while the peer answers).
type PathLoss struct {
	Device      string
	SeqErrors   uint64 // the port's packet sequence errors during the run
	Retransmits uint64 // the driver's retransmits during the run; 0 where it has none
	RetryCnt    int    // the QP's retry_cnt
}

// pathLoss returns the run's loss evidence from the deltas of its port's
// counters, or nil when they do not show a lossy path. Retransmits alone
// prove nothing, since a QP retransmits to a dead peer too, and neither do
// a few sequence errors: a peer killed or a link downed mid-message leaves
// one or two NAKs behind before its silence ends the run (measured: 1 NAK
// and 5 retransmits for a killed responder, 2 and 7 for a link down, at
// retry_cnt 3). A lossy path that exhausted retry_cnt sent at least that
// many NAKs, and NAKs drove most of its retries (204 NAKs to 207
// retransmits at 5% loss).
func pathLoss(device string, d portstats.Deltas, retryCnt int) *PathLoss {
	if d.Categories == nil {
		return nil
	}
	seq := d.Categories.Values[portstats.SeqErrors]
	re := d.Categories.Values[portstats.Retransmits]
	if seq == 0 || seq < uint64(retryCnt) || 2*seq < re {
		return nil
	}
	return &PathLoss{Device: device, SeqErrors: seq, Retransmits: re, RetryCnt: retryCnt}
}

// counted says what the port counted, for an error message.
func (l *PathLoss) counted() string {
	s := fmt.Sprintf("%s counted %d packet sequence errors (NAKs for lost packets) during the run", l.Device, l.SeqErrors)
	if l.Retransmits > 0 {
		s = fmt.Sprintf("%s counted %d packet sequence errors (NAKs for lost packets) and %d retransmits during the run", l.Device, l.SeqErrors, l.Retransmits)
	}
	return s
}

// retryCause replaces RETRY_EXC_ERR's usual likely cause.
func (l *PathLoss) retryCause() string {
	return fmt.Sprintf("the path is dropping packets and the peer was answering: %s, and the transport gave up after retry_cnt %d retries with no ACK between them (soft-RoCE counts every NAK); find the loss (tc qdisc, cabling, switch or NIC drops), or set retry_cnt 7 (forever on soft-RoCE) to measure through it", l.counted(), l.RetryCnt)
}
