package rdma

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Op is the RDMA operation a test measures. The numbers match enum rr_op
// in shim.h.
type Op int

// The operations.
const (
	OpSend Op = iota
	OpSendImm
	OpWrite
	OpWriteImm
	OpRead
	OpFetchAdd
	OpCmpSwap
)

var opNames = []string{"send", "send_imm", "write", "write_imm", "read", "fetch_add", "cmp_swap"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Atomic reports whether the op is an 8-byte atomic.
func (o Op) Atomic() bool { return o == OpFetchAdd || o == OpCmpSwap }

// UsesReceive reports whether the op consumes a receive WR at its target.
func (o Op) UsesReceive() bool { return o == OpSend || o == OpSendImm || o == OpWriteImm }

// PingPong reports whether latency is measured by a ping-pong (the target
// answers) rather than by the completion of a round-trip operation.
func (o Op) PingPong() bool { return o == OpSend || o == OpSendImm || o == OpWrite || o == OpWriteImm }

// OneWay reports whether a one-way latency (RTT/2) is meaningful: the
// ping-pong sends the same message each way. Reads and atomics are
// request-response, so only their round trip is reported.
func (o Op) OneWay() bool { return o.PingPong() }

// Measure is what a test measures.
type Measure int

// The measures.
const (
	MeasureLatency Measure = iota
	MeasureBandwidth
	// MeasureConnect connects the QPs through the CM and closes them:
	// the run is the connections' set-up, with no traffic.
	MeasureConnect
)

var measureNames = []string{"latency", "bandwidth", "connect"}

func (m Measure) String() string {
	if m >= 0 && int(m) < len(measureNames) {
		return measureNames[m]
	}
	return fmt.Sprintf("measure(%d)", int(m))
}

// Mode is how completions are waited for.
type Mode int

// The modes.
const (
	ModeBusyPoll Mode = iota
	ModeEvent
)

var modeNames = []string{"busy_poll", "event"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// QPType is the transport.
type QPType int

// The transports.
const (
	RC QPType = iota
	UC
	UD
)

var qpTypeNames = []string{"rc", "uc", "ud"}

func (t QPType) String() string {
	if t >= 0 && int(t) < len(qpTypeNames) {
		return qpTypeNames[t]
	}
	return fmt.Sprintf("qp_type(%d)", int(t))
}

func parseName(kind, s string, names []string) (int, error) {
	for i, n := range names {
		if s == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q; want one of %s", kind, s, strings.Join(names, ", "))
}

// ParseOp reads an op name such as "write_imm".
func ParseOp(s string) (Op, error) { i, err := parseName("op", s, opNames); return Op(i), err }

// ParseMeasure reads "latency", "bandwidth" or "connect".
func ParseMeasure(s string) (Measure, error) {
	i, err := parseName("measure", s, measureNames)
	return Measure(i), err
}

// ParseMode reads "busy_poll" or "event".
func ParseMode(s string) (Mode, error) {
	i, err := parseName("mode", s, modeNames)
	return Mode(i), err
}

// ParseQPType reads "rc", "uc" or "ud".
func ParseQPType(s string) (QPType, error) {
	i, err := parseName("qp_type", s, qpTypeNames)
	return QPType(i), err
}

// The enums travel as their names in JSON (results, the control channel).
func (o Op) MarshalText() ([]byte, error)      { return []byte(o.String()), nil }
func (m Measure) MarshalText() ([]byte, error) { return []byte(m.String()), nil }
func (m Mode) MarshalText() ([]byte, error)    { return []byte(m.String()), nil }
func (t QPType) MarshalText() ([]byte, error)  { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Op) UnmarshalText(b []byte) (err error) { *o, err = ParseOp(string(b)); return }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Measure) UnmarshalText(b []byte) (err error) { *m, err = ParseMeasure(string(b)); return }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Mode) UnmarshalText(b []byte) (err error) { *m, err = ParseMode(string(b)); return }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *QPType) UnmarshalText(b []byte) (err error) { *t, err = ParseQPType(string(b)); return }

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

// moderationBytes bounds the default CQ moderation: the bytes of the
// messages between two signalled send WRs.
const moderationBytes = 8 << 20

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

// check reports every setting that cannot work, saying why.
func (s Test) check() error {
	if err := s.checkCombination(); err != nil {
		return err
	}
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if s.Size < 1 || s.Size > 1<<30 {
		add("size %d bytes is outside 1 B..1 GiB", s.Size)
	}
	if s.Iterations < 0 || (s.Iterations == 0 && s.Duration == 0) {
		add("iterations %d: want at least 1, or a duration", s.Iterations)
	}
	if s.Duration < 0 {
		add("duration %v must not be negative", time.Duration(s.Duration))
	}
	if s.Warmup < 0 {
		add("warmup %d must not be negative", s.Warmup)
	}
	if s.QPs < 1 || s.QPs > 4096 {
		add("qps %d is outside 1..4096", s.QPs)
	}
	if s.Connect == ConnectCM && (s.ConnectParallel < 1 || s.ConnectParallel > max(s.QPs, 1)) {
		add("connect_parallel %d: want 1..qps (%d), the QPs connecting through the CM at once", s.ConnectParallel, s.QPs)
	}
	if s.Threads < 1 || s.Threads > s.QPs {
		add("threads %d: want 1..qps (%d); each thread drives at least one QP", s.Threads, s.QPs)
	}
	for _, c := range s.CPUs {
		if c < 0 {
			add("cpu %d is negative", c)
		}
	}
	if s.TxDepth < 1 || s.TxDepth > 16384 {
		add("tx_depth %d is outside 1..16384", s.TxDepth)
	}
	if s.RxDepth < 1 || s.RxDepth > 16384 {
		add("rx_depth %d is outside 1..16384", s.RxDepth)
	}
	if s.SRQ && (s.SRQDepth < 1 || s.SRQDepth > 16384) {
		add("srq_depth %d is outside 1..16384", s.SRQDepth)
	}
	if s.CQModeration < 1 || s.CQModeration > s.TxDepth {
		add("cq_moderation %d: want 1..tx_depth (%d), or the send queue fills before a completion is asked for", s.CQModeration, s.TxDepth)
	}
	if s.PostList < 1 || s.PostList > s.TxDepth {
		add("post_list %d: want 1..tx_depth (%d)", s.PostList, s.TxDepth)
	}
	if s.Inline < 0 || s.Inline > 4096 {
		add("inline %d is outside 0..4096 bytes", s.Inline)
	}
	if s.StallTimeout <= 0 {
		add("stall_timeout %v must be positive", time.Duration(s.StallTimeout))
	}
	if s.QPType == UD && s.LossTimeout <= 0 {
		add("loss_timeout %v must be positive", time.Duration(s.LossTimeout))
	}
	if err := s.QP.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (s Test) checkCombination() error {
	if err := s.checkMulticast(); err != nil {
		return err
	}
	switch {
	case s.QPType == UD && !s.Op.UsesReceive():
		return fmt.Errorf("op %s needs a connection to the target's memory, and UD has none (it sends datagrams to a receive queue); use op send or send_imm, or qp_type rc", s.Op)
	case s.QPType == UD && s.Op == OpWriteImm:
		return fmt.Errorf("op %s writes the target's memory, which UD cannot; use op send_imm", s.Op)
	case s.SRQ && !s.Op.UsesReceive():
		return fmt.Errorf("srq shares receive queues, and op %s consumes no receives; use send, send_imm or write_imm, or drop srq", s.Op)
	case s.SRQ && s.QPType == UD:
		return errors.New("srq with qp_type ud is not built yet; use rc or uc")
	case s.SRQ && s.Validate:
		return errors.New("validate checks each QP's receive area, and with srq the QPs share one; drop validate or srq")
	case s.QPType == UD && s.Connect == ConnectCM:
		return errors.New("qp_type ud with connect: rdma_cm (an RDMA_PS_UDP id) is not built yet; use connect: exchange, which builds the address handles from the exchanged GIDs")
	case s.QPType == UD && s.Size > udMaxSize:
		return fmt.Errorf("size %d bytes: a UD message is one packet, at most the path MTU, and no port's MTU is above %d bytes; use a size of at most %d (the path MTU: qp_attrs.mtu_bytes, or the smaller of both ports' active MTU)", s.Size, udMaxSize, udMaxSize)
	case s.QPType == UD && s.QP.MTU != 0 && s.Size > s.QP.MTU:
		return fmt.Errorf("size %d bytes is above the path MTU %d bytes (qp_attrs.mtu_bytes): a UD message is one packet; use a size of at most %d", s.Size, s.QP.MTU, s.QP.MTU)
	case s.Connect != ConnectExchange && s.Connect != ConnectCM:
		return fmt.Errorf("connect %d is not a way to connect; want one of %s", int(s.Connect), strings.Join(connectNames, ", "))
	case s.Measure == MeasureConnect && s.Connect != ConnectCM:
		return errors.New("measure connect times connections through the CM; add connect: rdma_cm (connect: exchange swaps QP numbers over the control channel, which has no set-up to time)")
	case s.Measure == MeasureConnect && (s.Iterations != 1 || s.Duration != 0):
		return errors.New("measure connect connects the QPs once per run; iterations and duration do not apply (set qps for the connections, and repeat the case for more runs)")
	case s.QPType == UC && (s.Op == OpRead || s.Op.Atomic()):
		return fmt.Errorf("op %s needs a response from the target, and UC has none; use qp_type rc", s.Op)
	case s.Op.Atomic() && s.Size != 8:
		return fmt.Errorf("op %s works on one 8-byte word; size must be 8, not %d", s.Op, s.Size)
	case s.Measure == MeasureLatency && s.Mode == ModeEvent && s.Op == OpWrite:
		return errors.New("op write, measure latency, mode event: an RDMA WRITE makes no completion at its target, so its arrival can only be seen by polling memory; use op write_imm for event mode")
	case s.Bidirectional && s.Measure != MeasureBandwidth:
		return errors.New("bidirectional applies to measure bandwidth only")
	case s.Measure == MeasureLatency && s.Op.PingPong() && s.Size < 1:
		return errors.New("a ping-pong needs at least 1 byte")
	}
	return nil
}

// checkMulticast refuses a multicast test that is not one UD QP sending
// one way, each refusal naming the fix.
func (s Test) checkMulticast() error {
	if s.Multicast == "" {
		if len(s.Receivers) > 0 {
			return errors.New("receivers are the responders of a multicast test; add multicast: (a group, or auto), or drop receivers")
		}
		return nil
	}
	g, err := netip.ParseAddr(s.Multicast)
	switch {
	case s.Multicast != MulticastAuto && (err != nil || !g.IsMulticast()):
		return fmt.Errorf("multicast %q is not a multicast address; use a group such as 239.1.1.1 (IPv4 224.0.0.0/4) or ff15::1 (IPv6 ff00::/8), or auto", s.Multicast)
	case s.QPType != UD:
		return fmt.Errorf("multicast sends datagrams to a group, which only UD QPs can; add qp_type: ud (not %s)", s.QPType)
	case s.Op != OpSend:
		return fmt.Errorf("multicast sends to a group's receive queues; use op send, not %s", s.Op)
	case s.Measure != MeasureBandwidth:
		return errors.New("multicast has no round trip: one sender, many receivers; use measure bandwidth")
	case s.QPs != 1 || s.Threads != 1:
		return fmt.Errorf("multicast sends from one QP (qps %d, threads %d); use qps 1", s.QPs, s.Threads)
	case s.Bidirectional:
		return errors.New("multicast sends one way; drop bidirectional")
	case s.Connect != ConnectExchange:
		return errors.New("multicast joins its group through the CM whatever connect says; drop connect: rdma_cm")
	}
	return nil
}

// String is the spec in one line, for logs and error messages.
func (s TestSpec) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}
