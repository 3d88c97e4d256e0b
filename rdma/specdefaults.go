package rdma

import "time"

// moderationBytes bounds the default CQ moderation: the bytes of the
// messages between two signalled send WRs.
const moderationBytes = 8 << 20

// withDefaults fills every zero setting; only Complete calls it.
func (s TestSpec) withDefaults() TestSpec {
	if s.Op.Atomic() && s.Size == 0 {
		s.Size = 8
	}
	if s.Size == 0 {
		s.Size = 2
		switch {
		case s.Measure == MeasureBandwidth && s.QPType == UD:
			// A UD message is one packet, at most the path MTU; 1024 is
			// the MTU of a RoCE port on a 1500-byte Ethernet MTU.
			s.Size = udDefaultSize
		case s.Measure == MeasureBandwidth:
			s.Size = 65536
		}
	}
	if s.Measure == MeasureConnect && s.Iterations == 0 && s.Duration == 0 {
		s.Iterations = 1 // a run connects its QPs once
	}
	if s.Iterations == 0 && s.Duration == 0 {
		s.Iterations = 1000
		if s.Measure == MeasureBandwidth {
			s.Iterations = 5000
		}
	}
	if s.Measure == MeasureLatency && s.Warmup == 0 && s.Duration == 0 {
		s.Warmup = min(100, s.Iterations/10)
	}
	if s.QPs == 0 {
		s.QPs = 1
	}
	switch {
	case s.Connect != ConnectCM:
		// A scenario's default for its CM cases; an exchange case has
		// nothing to connect at once.
		s.ConnectParallel = 0
	case s.ConnectParallel == 0:
		s.ConnectParallel = 1
	}
	if s.Threads == 0 {
		s.Threads = 1
	}
	if s.TxDepth == 0 {
		s.TxDepth = 128
		if s.Measure != MeasureBandwidth {
			s.TxDepth = 16
		}
	}
	if s.RxDepth == 0 {
		s.RxDepth = 512
		if s.Measure != MeasureBandwidth {
			s.RxDepth = 16
		}
	}
	switch {
	case !s.SRQ:
		s.SRQDepth = 0
	case s.SRQDepth == 0:
		s.SRQDepth = s.RxDepth
	}
	if s.CQModeration == 0 {
		// perftest's 100, but never more than moderationBytes between
		// asked completions: at 8 MiB a window of 100 WRs is 800 MiB,
		// half a minute of a slow link without a word from the CQ. A
		// completion per 8 MiB costs nothing; up to 80 KiB (the default
		// 64 KiB included) the default is perftest's.
		s.CQModeration = max(1, min(100, s.TxDepth, moderationBytes/max(s.Size, 1)))
	}
	if s.PostList == 0 {
		s.PostList = 1
	}
	if s.StallTimeout == 0 {
		s.StallTimeout = Duration(5 * time.Second)
	}
	switch {
	case s.QPType != UD:
		s.LossTimeout = 0
	case s.LossTimeout == 0:
		s.LossTimeout = Duration(defaultLossTimeout)
	}
	if s.Op == OpRead && s.QP.Timeout == nil {
		rd := 1
		if s.QP.MaxRdAtomic != nil {
			rd = max(1, *s.QP.MaxRdAtomic)
		}
		s.QP.Timeout = new(readAckTimeout(s.QPs * rd * s.Size))
	}
	return s
}

// udDefaultSize is a UD bandwidth run's default message size.
const udDefaultSize = 1024

// udMaxSize is the largest UD message on any port: the largest path MTU.
const udMaxSize = 4096

// defaultLossTimeout is a UD run's default loss_timeout: a thousand times
// a round trip under emulation, and long enough that a loaded host's
// scheduling delay makes an answer late, not lost.
const defaultLossTimeout = time.Second

// slowLinkBitsPerSec is the slowest link whose read responses the default
// ACK timeout waits for: 0.1 Gb/s, about half of what soft-RoCE under
// emulation moves.
const slowLinkBitsPerSec = 0.1e9

// readAckTimeout is the default local ACK timeout (4.096 us x 2^t) of a
// read run whose QPs may have bytes of read responses owed at once. A
// responder may send one QP's response whole before the next's (rxe
// does), so a QP can hear nothing while the others' bytes cross; a
// timeout shorter than that retries a healthy read, and retry_cnt
// retries later fails it with RETRY_EXC_ERR (perftest's retry_cnt 7 hides
// this on rxe, which retries forever: 157 retries in a 4 QP x 4 MiB
// ib_read_bw in the VM, at perftest's 14). Never below the default.
func readAckTimeout(bytes int) int {
	need := float64(bytes) * 8 / slowLinkBitsPerSec
	t := defaultAckTimeout
	for t < 31 && 4.096e-6*float64(uint64(1)<<t) < need {
		t++
	}
	return t
}
