package soak

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

// Misbehaviour is what a misbehaving client does to the responder; Good
// is a client that runs its test properly.
type Misbehaviour int

// The misbehaviours, in the order the plan cycles through them.
const (
	Good Misbehaviour = iota
	// KilledMidTest: a client process is SIGKILLed while its test runs.
	KilledMidTest
	// CloseMidHandshake: the client says hello and hangs up.
	CloseMidHandshake
	// GarbageFrames: frames with the right magic and nonsense inside.
	GarbageFrames
	// WrongToken: a client with another fleet's token.
	WrongToken
	// StallPastStep: the client sets a test up (QPs connected on both
	// ends) and then says nothing for longer than the responder's step
	// deadline.
	StallPastStep
	// HalfOpen: the client sends part of a frame header and never more.
	HalfOpen
	misbehaviourEnd
)

var misbehaviourNames = [...]string{"good", "killed_mid_test", "close_mid_handshake", "garbage_frames", "wrong_token", "stall_past_step", "half_open"}

func (m Misbehaviour) String() string {
	if m >= 0 && m < misbehaviourEnd {
		return misbehaviourNames[m]
	}
	return fmt.Sprintf("misbehaviour(%d)", int(m))
}

// MisbehaveEvery is how often a client misbehaves: the last of every
// twenty tests in the plan.
const MisbehaveEvery = 20

// Case is one test of the plan: a good client's spec, or a misbehaviour.
type Case struct {
	Index        int
	Misbehaviour Misbehaviour
	// Spec is the good test, or the test a misbehaving client sets up
	// before it misbehaves (KilledMidTest, StallPastStep).
	Spec rdma.TestSpec
	// Runs on one session; more than one asks the responder to keep it
	// between runs, as rdmarun_exporter does.
	Runs int
	// KillAfter is how long a KilledMidTest client's test runs before
	// the kill.
	KillAfter time.Duration
	// Garbage seeds the nonsense a GarbageFrames client sends.
	Garbage uint64
	// SkipPortCounters runs without reading either port's counters, as
	// rdmarun_exporter does (the responder is told so).
	SkipPortCounters bool
}

// Per-test traffic: enough to exercise every path of the engine (several
// completions per QP, queues that wrap), small enough that a few hundred
// tests take a couple of minutes on soft-RoCE in an emulated VM.
const (
	latencyBytes   = 128 << 10 // per direction, over all QPs
	bandwidthBytes = 1 << 20
	// inFlightBytes bounds what one test has posted and not yet seen
	// complete (size x QPs, and x tx_depth for bandwidth). soft-RoCE
	// drops what it cannot queue and an emulated VM acknowledges slowly:
	// four tests each with 8 QPs of 128 outstanding 1 MiB writes (1 GiB in
	// flight) ran QPs out of retries (RETRY_EXC_ERR) and stalled others
	// in the first runs, the fabric failing rather than the responder.
	inFlightBytes = 2 << 20
	maxSize       = 1 << 20
)

// The soak's deadlines for a path that makes no progress. The defaults (a
// 5 s stall, ACK timeout 14 = 67 ms with 6 retries) are for a real
// fabric; in the testbed four tests at once busy-poll with up to four
// threads each on two emulated CPUs, which starves soft-RoCE's own
// kernel work: with no packet dropped (veth and rxe drop counters zero)
// a run counted 166 ACK timeouts and a 2 B write ping-pong on 6 QPs
// went 5 s without progress. The soak is about what the responder holds,
// not how fast a starved VM moves packets, so it allows a starved path
// 30 s, and ACKs 0.5 s (timeout 17) times 6 retries.
const (
	stallTimeout = rdma.Duration(30 * time.Second)
	ackTimeout   = 17
)

var allOps = []rdma.Op{rdma.OpSend, rdma.OpSendImm, rdma.OpWrite, rdma.OpWriteImm, rdma.OpRead, rdma.OpFetchAdd, rdma.OpCmpSwap}

// Plan is the soak's n tests drawn from seed: every process of a soak
// computes the same plan and runs its share.
func Plan(seed uint64, n int) []Case {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cases := make([]Case, n)
	for i := range cases {
		c := Case{Index: i, Runs: 1}
		if i%MisbehaveEvery == MisbehaveEvery-1 {
			c.Misbehaviour = Misbehaviour(1 + (i/MisbehaveEvery)%int(misbehaviourEnd-1))
		}
		switch c.Misbehaviour {
		case Good:
			c.Spec = goodSpec(r)
			if r.IntN(4) == 0 {
				c.Runs = 2 + r.IntN(2)
			}
			c.SkipPortCounters = r.IntN(2) == 0
		case KilledMidTest, StallPastStep:
			// A long bandwidth test, so the kill lands mid-transfer and
			// the stall holds QPs and registered memory on both ends.
			c.Spec = rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 64 << 10,
				Duration: rdma.Duration(30 * time.Second), QPs: 1 + r.IntN(8)}
			c.KillAfter = time.Duration(200+r.IntN(800)) * time.Millisecond
		case GarbageFrames:
			c.Garbage = r.Uint64()
		}
		cases[i] = c
	}
	return cases
}

func goodSpec(r *rand.Rand) rdma.TestSpec {
	s := rdma.TestSpec{
		Op:      allOps[r.IntN(len(allOps))],
		Measure: rdma.Measure(r.IntN(2)),
		Mode:    rdma.Mode(r.IntN(2)),
		QPs:     1 + r.IntN(8),
		// Log-uniform over 2 B..1 MiB: small and large messages take
		// different paths (inline, several packets per message).
		Size:         2 << r.IntN(20),
		Validate:     r.IntN(2) == 0,
		StallTimeout: stallTimeout,
		QP:           rdma.QPSettings{Timeout: new(ackTimeout)},
	}
	if s.Op == rdma.OpWrite && s.Measure == rdma.MeasureLatency && s.Mode == rdma.ModeEvent {
		// Refused by design (nothing completes at a WRITE's target);
		// the imm variant is the event-mode ping-pong.
		s.Op = rdma.OpWriteImm
	}
	if s.Op.Atomic() {
		s.Size = 8
	}
	// No UC: it has no retransmission, and soft-RoCE on veths in an
	// emulated VM drops packets under the soak's load (veth rx_dropped
	// and rxe send_err counted in the first runs), so a UC ping-pong or
	// receiver waits for a message that never comes, by design. rdma's
	// TestUC covers UC on a quiet fabric.
	// Big messages with fewer QPs: the sizes and QP counts each cover
	// their range, not every product of the two.
	s.QPs = max(1, min(s.QPs, inFlightBytes/s.Size))
	if s.QPs > 1 && r.IntN(2) == 0 {
		s.Threads = 2
	}
	budget := latencyBytes
	lo, hi := 2, 100
	if s.Measure == rdma.MeasureBandwidth {
		budget, hi = bandwidthBytes, 200
		s.Bidirectional = r.IntN(4) == 0
		s.TxDepth = max(1, min(128, inFlightBytes/(s.Size*s.QPs)))
	}
	s.Iterations = min(max(budget/(s.Size*s.QPs), lo), hi)
	return s
}
