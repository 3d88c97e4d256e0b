package rdma

import (
	"fmt"
	"strings"
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
