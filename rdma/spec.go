package rdma

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// TestSpec is one test as a user, a scenario or a peer gives it: a zero
// field, or a nil QP attribute, means "the default". Complete turns it
// into a Test, the only form the engine, the responder and the exporter
// run.
type TestSpec struct {
	Op      Op      `json:"op"`
	Measure Measure `json:"measure"`
	Mode    Mode    `json:"mode"`
	QPType  QPType  `json:"qp_type"`
	// Connect is how the QPs are connected; absent: by exchange.
	Connect Connect `json:"connect,omitempty"`
	// ConnectParallel bounds the QPs connecting through the CM at once;
	// absent: 1, one after another. Only with connect: rdma_cm; an
	// exchange test drops it.
	ConnectParallel int `json:"connect_parallel,omitempty"`
	Size            int `json:"size_bytes"`
	// Iterations per QP: round trips (latency) or messages (bandwidth).
	// Ignored when Duration is set.
	Iterations int      `json:"iterations,omitempty"`
	Duration   Duration `json:"duration,omitempty"`
	Warmup     int      `json:"warmup"` // latency only: round trips per QP before the measured ones
	QPs        int      `json:"qps"`
	Threads    int      `json:"threads"`        // per side; QPs are spread over them round robin
	CPUs       []int    `json:"cpus,omitempty"` // pin thread i to CPUs[i % len]; empty: not pinned
	TxDepth    int      `json:"tx_depth"`       // outstanding send WRs per QP
	RxDepth    int      `json:"rx_depth"`       // receives kept posted per QP
	// SRQ: each side's QPs take their receives from one shared receive
	// queue of SRQDepth receives (default rx_depth) instead of rx_depth
	// each, as a server with many clients does.
	SRQ      bool `json:"srq,omitempty"`
	SRQDepth int  `json:"srq_depth,omitempty"`
	// Multicast is the group (an IPv4 or IPv6 multicast address, or
	// MulticastAuto) a UD send bandwidth test sends to: one sender, every
	// receiver joined to the group through the CM. Empty: unicast.
	// Receivers are more responders (HOST[:PORT] of rdmarun serve) that
	// receive it besides the peer.
	Multicast string   `json:"multicast,omitempty"`
	Receivers []string `json:"receivers,omitempty"`
	// CQModeration signals every Nth send WR and a run's last. Latency
	// runs given by a duration, and read and atomic latency (whose
	// completion is the round trip), signal every WR. The default is
	// 100, at most tx_depth, and at most 8 MiB of messages
	// (moderationBytes) between signalled WRs.
	CQModeration  int    `json:"cq_moderation"`
	PostList      int    `json:"post_list"` // WRs per ibv_post_send call (bandwidth)
	Inline        int    `json:"inline"`    // largest message sent inline; 0: none
	Bidirectional bool   `json:"bidirectional,omitempty"`
	Hugepages     bool   `json:"hugepages,omitempty"` // buffers on 2 MiB huge pages
	Validate      bool   `json:"validate,omitempty"`  // write a pattern and check it arrived
	Seed          uint64 `json:"seed,omitempty"`      // of the validation pattern; both ends derive it
	// StallTimeout: a wait for a completion fails when nothing completed
	// and the port received nothing for this long. A port that keeps
	// receiving extends the wait, up to StallLimit.
	StallTimeout Duration `json:"stall_timeout"`
	// LossTimeout (UD only): a message, or a round trip's answer, that
	// has not arrived this long after it could have is counted lost and
	// the run moves on. An answer that comes later still is counted late,
	// not lost.
	LossTimeout Duration   `json:"loss_timeout,omitempty"`
	QP          QPSettings `json:"qp_attrs"`
}

// Test is a TestSpec with every default filled in and every check passed.
// Only Complete makes one (decoding one from JSON completes it too), so no
// layer guesses which defaults another has applied, and a responder never
// runs what it has not checked.
//
// Its QP holds the attributes themselves, each with a value; it shadows
// the embedded spec's QP settings, which Complete leaves resolved too.
type Test struct {
	TestSpec
	QP QPAttrs `json:"qp_attrs"`
	// complete tells a Test from Complete apart from a literal.
	complete bool
}

// Complete fills every default a perftest user would expect, checks that
// the combination can run, and draws the validation pattern's seed, so
// that results record what really ran. It is the one place defaults are
// applied. On error the Test still holds the filled-in settings, for the
// message, but Ready refuses it.
func (s TestSpec) Complete() (Test, error) {
	s = s.withDefaults()
	t := Test{TestSpec: s, QP: s.QP.resolve()}
	t.TestSpec.QP = t.QP.Settings()
	if err := t.check(); err != nil {
		return t, err
	}
	t.complete = true
	if t.Validate && t.Seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		t.Seed = binary.LittleEndian.Uint64(b[:]) | 1
		t.TestSpec.Seed = t.Seed
	}
	return t, nil
}

// ErrIncomplete is returned by the engine for a Test that Complete did not
// make.
var ErrIncomplete = errors.New("rdma: the test was not made by TestSpec.Complete")

// Ready reports whether Complete made t.
func (t Test) Ready() error {
	if !t.complete {
		return ErrIncomplete
	}
	return nil
}

// Settings is t as a TestSpec with every setting given, for the control
// channel: the responder completes it again, which changes nothing.
func (t Test) Settings() TestSpec {
	s := t.TestSpec
	s.QP = t.QP.Settings()
	return s
}

// UnmarshalJSON completes the decoded spec, so a Test read back (a result,
// a report) holds the same guarantee as one made here.
func (t *Test) UnmarshalJSON(b []byte) error {
	var s TestSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	done, err := s.Complete()
	if err != nil {
		return err
	}
	*t = done
	return nil
}

// String is the test in one line, for logs and error messages.
func (t Test) String() string {
	b, _ := json.Marshal(t)
	return string(b)
}

// Duration is a time.Duration that reads and writes as "5s" in JSON.
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}

// stallLimitFactor: a wait that sees its port receive all along may last
// this many stall timeouts. A port that receives is alive, and most
// slow waits end long before; the bound is for a flow that loses every
// packet (rxe retries forever at retry_cnt 7) while other traffic keeps
// its port busy.
const stallLimitFactor = 12

// StallWindow is how long a run's port may receive nothing while a
// completion is awaited: the stall timeout, or two local ACK timeouts
// where that is longer, since a QP that lost a packet hears nothing until
// its ACK timer fires and it retransmits.
func (t Test) StallWindow() time.Duration {
	w := time.Duration(t.StallTimeout)
	if t.QP.Timeout > 0 {
		ack := time.Duration(4096 << t.QP.Timeout) // 4.096 us x 2^timeout, in ns
		w = max(w, 2*ack)
	}
	return w
}

// StallLimit is the longest a run waits for one completion while its
// port keeps receiving: a minute at the default stall timeout.
func (t Test) StallLimit() time.Duration {
	return stallLimitFactor * t.StallWindow()
}

// String is the spec in one line, for logs and error messages.
func (s TestSpec) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}
