package rdma

import (
	"errors"
	"fmt"
	"time"
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
	SQDepth    int // send queue depth; 0 means 128
	MaxInline  int // inline data requested for the QP; 0 means 220, negative means none
}

func (c *EndpointConfig) withDefaults() EndpointConfig {
	out := *c
	if out.Port == 0 {
		out.Port = 1
	}
	if out.SQDepth == 0 {
		out.SQDepth = 128
	}
	if out.MaxInline == 0 {
		out.MaxInline = 220
	}
	if out.MaxInline < 0 {
		out.MaxInline = 0
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
	case c.SQDepth < 0 || c.SQDepth > 1<<15:
		return fmt.Errorf("endpoint: send queue depth %d out of range 1..32768", c.SQDepth)
	}
	return nil
}

// QPAttrs are the connection attributes of an RC QP. The zero value of a
// field means "the default" (see DefaultQPAttrs); Effective in results
// holds what was really set.
type QPAttrs struct {
	MTU          int `json:"mtu_bytes"`     // path MTU; 0: the port's active MTU
	Timeout      int `json:"timeout"`       // local ACK timeout, 4.096 us * 2^timeout
	RetryCnt     int `json:"retry_cnt"`     // transport retries before RETRY_EXC_ERR
	RNRRetry     int `json:"rnr_retry"`     // receiver-not-ready retries (7: forever)
	MinRNRTimer  int `json:"min_rnr_timer"` // enum, 12 = 0.64 ms
	MaxRdAtomic  int `json:"max_rd_atomic"` // outstanding reads/atomics per QP
	SL           int `json:"sl"`
	TrafficClass int `json:"traffic_class"`
	HopLimit     int `json:"hop_limit"`
}

// DefaultQPAttrs are the attributes used where a field is zero. retry_cnt
// is 6, not the 7 many tools hard-code: soft-RoCE treats 7 as "retry
// forever", so a dead peer would never produce an error completion.
func DefaultQPAttrs() QPAttrs {
	return QPAttrs{Timeout: 14, RetryCnt: 6, RNRRetry: 7, MinRNRTimer: 12, MaxRdAtomic: 1, HopLimit: 64}
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

// merged fills the zero fields from DefaultQPAttrs. Zero is a legal value
// for retry_cnt and timeout, so callers that want 0 must say so through
// an explicit non-default path; no such path exists yet.
func (q QPAttrs) merged() QPAttrs {
	d := DefaultQPAttrs()
	if q.MTU != 0 {
		d.MTU = q.MTU
	}
	if q.Timeout != 0 {
		d.Timeout = q.Timeout
	}
	if q.RetryCnt != 0 {
		d.RetryCnt = q.RetryCnt
	}
	if q.RNRRetry != 0 {
		d.RNRRetry = q.RNRRetry
	}
	if q.MinRNRTimer != 0 {
		d.MinRNRTimer = q.MinRNRTimer
	}
	if q.MaxRdAtomic != 0 {
		d.MaxRdAtomic = q.MaxRdAtomic
	}
	if q.HopLimit != 0 {
		d.HopLimit = q.HopLimit
	}
	d.SL, d.TrafficClass = q.SL, q.TrafficClass
	return d
}

// EndpointInfo is what the other end needs to connect to an endpoint and
// reach its memory.
type EndpointInfo struct {
	Device    string  `json:"device"`
	Port      int     `json:"port"`
	QPN       uint32  `json:"qpn"`
	PSN       uint32  `json:"psn"`
	LID       uint16  `json:"lid"`
	GID       GIDAddr `json:"gid"`
	GIDIndex  int     `json:"gid_index"`
	GIDType   GIDType `json:"gid_type"`
	LinkLayer string  `json:"link_layer"`
	RKey      uint32  `json:"-"` // a secret: whoever has it may write the memory
	Addr      uint64  `json:"-"`
	ActiveMTU int     `json:"active_mtu_bytes"`
	MaxInline int     `json:"max_inline_bytes"`
}

// LatencyOptions control one latency run.
type LatencyOptions struct {
	Size       int
	Iterations int
	Warmup     int
	// StallTimeout ends the run when nothing arrives for this long; 0
	// means 5 s.
	StallTimeout time.Duration
	// Threads is 1 to drive both ends from one thread, 2 (the default, 0)
	// to answer from a second thread as a remote peer would.
	Threads int
}

// Validate reports the first option that cannot work for an endpoint
// whose largest message is maxMessage.
func (o LatencyOptions) Validate(maxMessage int) error {
	switch {
	case o.Size < 1:
		return fmt.Errorf("latency: size %d bytes must be at least 1", o.Size)
	case o.Size > maxMessage:
		return fmt.Errorf("latency: size %d bytes exceeds the endpoint's buffer of %d bytes", o.Size, maxMessage)
	case o.Iterations < 1:
		return fmt.Errorf("latency: iterations %d must be at least 1", o.Iterations)
	case o.Warmup < 0:
		return fmt.Errorf("latency: warm-up %d must not be negative", o.Warmup)
	case o.Threads < 0 || o.Threads > 2:
		return fmt.Errorf("latency: threads %d must be 1 or 2", o.Threads)
	case o.StallTimeout < 0:
		return fmt.Errorf("latency: stall timeout %v must not be negative", o.StallTimeout)
	}
	return nil
}

// LatencyResult is one measured ping-pong run.
type LatencyResult struct {
	Op         string        `json:"op"`
	Size       int           `json:"size_bytes"`
	Iterations int           `json:"iterations"`
	Warmup     int           `json:"warmup"`
	Inline     bool          `json:"inline"`
	Threads    int           `json:"threads"`
	Samples    []uint64      `json:"-"`       // round-trip times, ns, in order
	RTT        Summary       `json:"rtt"`     // round trip
	OneWay     Summary       `json:"one_way"` // RTT/2
	Elapsed    time.Duration `json:"elapsed_ns"`
	QP         QPAttrs       `json:"qp"` // effective attributes
	Requester  EndpointInfo  `json:"requester"`
	Responder  EndpointInfo  `json:"responder"`
}
