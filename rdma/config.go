package rdma

import (
	"errors"
	"fmt"
)

// EndpointConfig says where an endpoint lives and how large its queues and
// buffer are.
type EndpointConfig struct {
	Device   string // e.g. "mlx5_0" or "rxe0"
	Port     int    // 1-based; 0 means 1
	GIDIndex int    // AutoGIDIndex chooses (see Port.SelectGID)
	// MaxMessage is the largest message the endpoint will send or receive;
	// its registered buffer holds a send area and a receive area of this
	// size.
	MaxMessage int
	SQDepth    int  // send queue depth
	RQDepth    int  // receive queue depth
	MaxInline  int  // inline data requested for the QP; 0: none
	Hugepages  bool // back the buffer with 2 MiB huge pages
	QPs        int  // queue pairs, each with its own CQ and buffer slot
	QPType     QPType
	// SRQDepth > 0 gives the QPs one shared receive queue of this many
	// receives (RQDepth then sizes nothing). SharedRecv: the QPs' messages
	// land in one receive area rather than one per QP, which sends allow
	// (their receive names the buffer) and write_imm does not (its data
	// goes where the writer says).
	SRQDepth   int
	SharedRecv bool
	// RecvCQs, with a shared receive queue, is the number of receive CQs
	// the QPs share: QP i's receives complete on CQ i % RecvCQs, one per
	// thread, so that each QP's own CQ holds only its sends. Sized for
	// the whole shared queue, one per QP would cost QPs x srq_depth
	// entries (1,024 QPs at srq_depth 4,096 took 1 GiB of CQ memory a
	// side on soft-RoCE) where the receives need srq_depth per thread.
	RecvCQs int
	// Channels is the number of completion channels (one per thread in
	// event mode); QP i's CQ reports to channel i % Channels. 0: none,
	// the loops busy-poll.
	Channels int
	// SkipPortCounters leaves the port's counters unread before and
	// after each run, so results carry no counter deltas. A prober that
	// exports the port's counters on its own needs no delta per probe,
	// and reading every counter file twice a run was two thirds of a
	// kept session's CPU per run under emulation.
	SkipPortCounters bool
}

// withDefaults fills the port, the one setting an endpoint has of its own;
// the test's settings come from SpecConfig.
func (c *EndpointConfig) withDefaults() EndpointConfig {
	out := *c
	if out.Port == 0 {
		out.Port = 1
	}
	return out
}

// Validate reports the first setting that cannot work.
func (c *EndpointConfig) Validate() error {
	switch {
	case c.Device == "":
		return errors.New("endpoint: device is empty; name one (see `rdmarun devices`)")
	case c.Port < 0 || c.Port > 255:
		return fmt.Errorf("endpoint: port %d out of range 1..255", c.Port)
	case c.GIDIndex < AutoGIDIndex:
		return fmt.Errorf("endpoint: gid index %d is negative; use an index from `rdmarun devices` or auto", c.GIDIndex)
	case c.MaxMessage < 1 || c.MaxMessage > 1<<30:
		return fmt.Errorf("endpoint: max message %d bytes out of range 1..1 GiB", c.MaxMessage)
	case c.SQDepth < 1 || c.SQDepth > 1<<15:
		return fmt.Errorf("endpoint: send queue depth %d out of range 1..32768", c.SQDepth)
	case c.RQDepth < 1 || c.RQDepth > 1<<15:
		return fmt.Errorf("endpoint: receive queue depth %d out of range 1..32768", c.RQDepth)
	case c.MaxInline < 0:
		return fmt.Errorf("endpoint: max inline %d bytes is negative", c.MaxInline)
	case c.QPs < 1 || c.QPs > 4096:
		return fmt.Errorf("endpoint: %d QPs out of range 1..4096", c.QPs)
	case c.Channels < 0 || c.Channels > 4096:
		return fmt.Errorf("endpoint: %d completion channels out of range 0..4096", c.Channels)
	case c.SRQDepth < 0 || c.SRQDepth > 1<<15:
		return fmt.Errorf("endpoint: shared receive queue depth %d out of range 0..32768", c.SRQDepth)
	case c.SharedRecv && c.SRQDepth == 0:
		return errors.New("endpoint: a shared receive area needs a shared receive queue")
	case c.SRQDepth > 0 && (c.RecvCQs < 1 || c.RecvCQs > c.QPs):
		return fmt.Errorf("endpoint: %d receive CQs for %d QPs sharing a receive queue; want 1..QPs", c.RecvCQs, c.QPs)
	case c.SRQDepth == 0 && c.RecvCQs != 0:
		return errors.New("endpoint: shared receive CQs need a shared receive queue")
	}
	return nil
}

// grhBytes is the space before the data of each receive: a UD receive
// starts with the packet's global route header (RR_GRH_BYTES).
func (c EndpointConfig) grhBytes() int {
	if c.QPType == UD {
		return udGRHBytes
	}
	return 0
}

// udGRHBytes is RR_GRH_BYTES (enums_linux.go ties them).
const udGRHBytes = 40

// GRHBytes is the global route header a UD receive holds before its data.
const GRHBytes = udGRHBytes

// QPAttrs are the connection attributes of an RC QP, each with its value:
// what a Test runs with and what results record (Effective after connect).
type QPAttrs struct {
	MTU          int `json:"mtu_bytes"`     // path MTU; 0: the port's active MTU
	Timeout      int `json:"timeout"`       // local ACK timeout, 4.096 us * 2^timeout; 0: wait forever
	RetryCnt     int `json:"retry_cnt"`     // transport retries before RETRY_EXC_ERR
	RNRRetry     int `json:"rnr_retry"`     // receiver-not-ready retries (7: forever)
	MinRNRTimer  int `json:"min_rnr_timer"` // enum, 12 = 0.64 ms
	MaxRdAtomic  int `json:"max_rd_atomic"` // outstanding reads/atomics per QP
	SL           int `json:"sl"`
	TrafficClass int `json:"traffic_class"`
	HopLimit     int `json:"hop_limit"`
}

// QPSettings are the QP attributes a user gives: nil means the default
// (DefaultQPAttrs). Pointers, because 0 is a legal retry_cnt, timeout or
// rnr_retry that a zero value could not tell from "unset".
type QPSettings struct {
	MTU          *int `json:"mtu_bytes,omitempty"`
	Timeout      *int `json:"timeout,omitempty"`
	RetryCnt     *int `json:"retry_cnt,omitempty"`
	RNRRetry     *int `json:"rnr_retry,omitempty"`
	MinRNRTimer  *int `json:"min_rnr_timer,omitempty"`
	MaxRdAtomic  *int `json:"max_rd_atomic,omitempty"`
	SL           *int `json:"sl,omitempty"`
	TrafficClass *int `json:"traffic_class,omitempty"`
	HopLimit     *int `json:"hop_limit,omitempty"`
}

// DefaultQPAttrs are the attributes used where a setting is nil.
// retry_cnt is 6, not the 7 many tools hard-code: soft-RoCE treats 7 as
// "retry forever", so a dead peer would never produce an error completion.
// The local ACK timeout is 17 (0.54 s), not perftest's 14 (67 ms): a
// software transport (rxe, siw) acknowledges from the host's CPU, and on a
// loaded host seven 67 ms timeouts in a row ended a healthy write run with
// RETRY_EXC_ERR (the false-alarm budget, soak/falsealarm_testbed_test.go),
// where perftest's retry_cnt 7 retries forever on rxe and hides it. 0.5 to
// 1 s is what UCX and NCCL use; a dead peer is still reported within
// seconds, by RETRY_EXC_ERR or the stall rule, whichever comes first.
func DefaultQPAttrs() QPAttrs {
	return QPAttrs{Timeout: defaultAckTimeout, RetryCnt: 6, RNRRetry: 7, MinRNRTimer: 12, MaxRdAtomic: 1, HopLimit: 64}
}

// defaultAckTimeout is the default local ACK timeout, 4.096 us x 2^17.
const defaultAckTimeout = 17

// fields pairs each setting with its attribute, so resolve and Settings
// cannot miss one.
func (q *QPSettings) fields(a *QPAttrs) []struct {
	set **int
	val *int
} {
	return []struct {
		set **int
		val *int
	}{
		{&q.MTU, &a.MTU}, {&q.Timeout, &a.Timeout}, {&q.RetryCnt, &a.RetryCnt}, {&q.RNRRetry, &a.RNRRetry},
		{&q.MinRNRTimer, &a.MinRNRTimer}, {&q.MaxRdAtomic, &a.MaxRdAtomic}, {&q.SL, &a.SL},
		{&q.TrafficClass, &a.TrafficClass}, {&q.HopLimit, &a.HopLimit},
	}
}

// resolve takes each given setting over its default.
func (q QPSettings) resolve() QPAttrs {
	a := DefaultQPAttrs()
	for _, f := range q.fields(&a) {
		if *f.set != nil {
			*f.val = **f.set
		}
	}
	return a
}

// Validate checks the settings with the defaults filled in, for a loader
// that wants to name a bad attribute before it builds any test.
func (q QPSettings) Validate() error { return q.resolve().Validate() }

// Settings gives every attribute as an explicit setting.
func (a QPAttrs) Settings() QPSettings {
	var q QPSettings
	for _, f := range q.fields(&a) {
		v := *f.val
		*f.set = &v
	}
	return q
}

// Validate checks the ranges the verbs API allows.
func (q QPAttrs) Validate() error {
	if q.MTU != 0 {
		if _, err := MTUEnum(q.MTU); err != nil {
			return fmt.Errorf("qp: %w", err)
		}
	}
	for _, f := range []struct {
		name     string
		v, lo, h int
	}{
		{"timeout", q.Timeout, 0, 31}, {"retry_cnt", q.RetryCnt, 0, 7}, {"rnr_retry", q.RNRRetry, 0, 7},
		{"min_rnr_timer", q.MinRNRTimer, 0, 31}, {"max_rd_atomic", q.MaxRdAtomic, 0, 255}, {"sl", q.SL, 0, 15},
		{"traffic_class", q.TrafficClass, 0, 255}, {"hop_limit", q.HopLimit, 0, 255},
	} {
		if f.v < f.lo || f.v > f.h {
			return fmt.Errorf("qp: %s %d out of range %d..%d", f.name, f.v, f.lo, f.h)
		}
	}
	return nil
}

// EndpointInfo is what the other end needs to connect to an endpoint and
// reach its memory. QP i's receive area is at Addr + i*Stride.
type EndpointInfo struct {
	Device    string   `json:"device"`
	Port      int      `json:"port"`
	QPNs      []uint32 `json:"qpns"`
	PSNs      []uint32 `json:"-"`
	LID       uint16   `json:"lid"`
	GID       GIDAddr  `json:"gid"`
	GIDIndex  int      `json:"gid_index"`
	GIDType   GIDType  `json:"gid_type"`
	LinkLayer string   `json:"link_layer"`
	RKey      uint32   `json:"-"` // a secret: whoever has it may write the memory
	Addr      uint64   `json:"-"`
	Stride    uint64   `json:"-"`
	ActiveMTU int      `json:"active_mtu_bytes"`
	MaxInline int      `json:"max_inline_bytes"`
	// QKey is a UD endpoint's Q_Key, which its peer's sends must carry.
	QKey uint32 `json:"qkey,omitempty"`
}

// PairConfig fills in the endpoint settings t needs (queues, QPs,
// channels, buffer size) on two endpoint configs that name the devices.
func PairConfig(t Test, requester, responder EndpointConfig) (EndpointConfig, EndpointConfig) {
	return SpecConfig(t, requester), SpecConfig(t, responder)
}

// SpecConfig fills in the endpoint settings t needs on c. It is how an
// endpoint gets its queue depths: EndpointConfig has no defaults of its
// own.
func SpecConfig(t Test, c EndpointConfig) EndpointConfig {
	c.MaxMessage = max(c.MaxMessage, t.Size)
	c.QPs = t.QPs
	c.QPType = t.QPType
	c.SQDepth = t.TxDepth
	c.RQDepth = t.RxDepth
	c.SRQDepth = t.SRQDepth
	c.SharedRecv = t.SRQ && t.Op != OpWriteImm
	c.RecvCQs = 0
	if t.SRQ {
		c.RecvCQs = t.Threads
	}
	c.MaxInline = t.Inline
	c.Hugepages = t.Hugepages
	c.Channels = 0
	if t.Mode == ModeEvent {
		c.Channels = t.Threads
	}
	return c
}
