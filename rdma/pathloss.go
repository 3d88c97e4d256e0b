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
// counters, or nil when the port counted no sequence error (or has no
// counter for them): retransmits alone prove nothing, since a QP
// retransmits to a dead peer too.
func pathLoss(device string, d portstats.Deltas, retryCnt int) *PathLoss {
	if d.Categories == nil {
		return nil
	}
	seq := d.Categories.Values[portstats.SeqErrors]
	if seq == 0 {
		return nil
	}
	return &PathLoss{Device: device, SeqErrors: seq, Retransmits: d.Categories.Values[portstats.Retransmits], RetryCnt: retryCnt}
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
