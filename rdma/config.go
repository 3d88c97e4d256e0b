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
	SQDepth    int  // send queue depth; 0 means 128
	RQDepth    int  // receive queue depth; 0 means 512
	MaxInline  int  // inline data requested for the QP; 0 means 220, negative means none
	Hugepages  bool // back the buffer with 2 MiB huge pages
	QPs        int  // queue pairs, each with its own CQ and buffer slot; 0 means 1
	QPType     QPType
	// Channels is the number of completion channels (one per thread in
	// event mode); QP i's CQ reports to channel i % Channels. 0: none,
	// the loops busy-poll.
	Channels int
}

func (c *EndpointConfig) withDefaults() EndpointConfig {
	out := *c
	if out.Port == 0 {
		out.Port = 1
	}
	if out.SQDepth == 0 {
		out.SQDepth = 128
	}
	if out.RQDepth == 0 {
		out.RQDepth = 512
	}
	if out.QPs == 0 {
		out.QPs = 1
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
	case c.RQDepth < 0 || c.RQDepth > 1<<15:
		return fmt.Errorf("endpoint: receive queue depth %d out of range 1..32768", c.RQDepth)
	case c.QPs < 0 || c.QPs > 4096:
		return fmt.Errorf("endpoint: %d QPs out of range 1..4096", c.QPs)
	case c.Channels < 0 || c.Channels > 4096:
		return fmt.Errorf("endpoint: %d completion channels out of range 0..4096", c.Channels)
	case c.QPType == UD:
		return errors.New("endpoint: qp_type ud is not supported yet; use rc or uc")
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
}

// PairConfig fills in the endpoint settings a spec needs (queues, QPs,
// channels, buffer size) on two endpoint configs that name the devices.
func PairConfig(spec TestSpec, requester, responder EndpointConfig) (EndpointConfig, EndpointConfig) {
	return SpecConfig(spec, requester), SpecConfig(spec, responder)
}

// SpecConfig fills in the endpoint settings spec needs on c.
func SpecConfig(spec TestSpec, c EndpointConfig) EndpointConfig {
	spec = spec.WithDefaults()
	c.MaxMessage = max(c.MaxMessage, spec.Size)
	c.QPs = spec.QPs
	c.QPType = spec.QPType
	c.SQDepth = spec.TxDepth
	c.RQDepth = spec.RxDepth
	c.MaxInline = spec.Inline
	if spec.Inline == 0 {
		c.MaxInline = -1
	}
	c.Hugepages = spec.Hugepages
	c.Channels = 0
	if spec.Mode == ModeEvent {
		c.Channels = spec.Threads
	}
	return c
}
