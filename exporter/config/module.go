package config

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// Module says how one target is probed: a round of Count latency probes per
// size every Interval, and optionally a bandwidth probe on a slower schedule.
type Module struct {
	Op    rdma.Op
	Mode  rdma.Mode
	Sizes []int // bytes
	QP    QP
	// Connect is how a probe's QPs connect: by exchange, or through the
	// CM, whose set-up each new session records.
	Connect rdma.Connect
	Count   int // latency probes per size and round
	// Warmup is the round trips each latency probe makes before its
	// Count measured ones, which are not recorded.
	Warmup   int
	Interval time.Duration // between rounds
	Timeout  time.Duration // a round that takes longer fails
	// Bandwidth is nil when the module runs no bandwidth probe.
	Bandwidth *Bandwidth
	// TLS is how the prober reaches responders that serve TLS; the zero
	// value dials plain TCP.
	TLS ClientTLS
	// Tests are one round's tests, complete and checked at load: a latency
	// test per size, then the bandwidth test if there is one.
	Tests []rdma.Test
}

// ClientTLS is the prober's side of a responder's TLS: the CA that signed
// the responders' certificates, and a client certificate when they ask
// for one (client_ca_file on their side).
type ClientTLS struct {
	CAFile     string `yaml:"ca_file" want:"a file path"`
	CertFile   string `yaml:"cert_file" want:"a file path"`
	KeyFile    string `yaml:"key_file" want:"a file path"`
	ServerName string `yaml:"server_name" want:"a host name"` // default: the host of the target's address
	// InsecureSkipVerify accepts any responder certificate: encrypted,
	// but open to a man in the middle (the token handshake still detects
	// a responder without the token).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Enabled reports whether the module dials its targets with TLS.
func (t ClientTLS) Enabled() bool { return t != ClientTLS{} }

// Ctrl is the control channel's form of the settings.
func (t ClientTLS) Ctrl() ctrl.TLSConfig {
	return ctrl.TLSConfig{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
}

// QP holds the queue pair settings of a module. A nil Timeout, RNRRetry or
// MTU leaves rdma's default (MTU: the port's active MTU); 0 is a value.
type QP struct {
	Type     rdma.QPType
	Timeout  *int
	RetryCnt int // always set: the module's default is 3
	RNRRetry *int
	MTU      *int
}

// Bandwidth is a module's bandwidth probe: Size-byte messages streamed for
// Duration, every Interval.
type Bandwidth struct {
	Size     int
	Duration time.Duration
	Interval time.Duration
	// TxDepth is the window of messages in flight per QP; 0 takes rdma's
	// default (128). On a fabric without flow control (RoCE without PFC,
	// soft-RoCE) a deep window of large messages overflows a queue on the
	// way and the probe causes the very retries the exporter reports.
	TxDepth int
}

// settings is the QP as the engine takes it.
func (q QP) settings() rdma.QPSettings {
	return rdma.QPSettings{MTU: q.MTU, Timeout: q.Timeout, RetryCnt: &q.RetryCnt, RNRRetry: q.RNRRetry}
}

// tests completes the tests of one round of the module: a latency test
// per size, then the bandwidth test if there is one.
func (m Module) tests() ([]rdma.Test, error) {
	base := rdma.TestSpec{
		Op:           m.Op,
		Mode:         m.Mode,
		QPType:       m.QP.Type,
		Connect:      m.Connect,
		StallTimeout: m.stallTimeout(),
		LossTimeout:  m.lossTimeout(),
		QP:           m.QP.settings(),
	}
	specs := make([]rdma.TestSpec, 0, len(m.Sizes)+1)
	for _, size := range m.Sizes {
		s := base
		s.Measure = rdma.MeasureLatency
		s.Size = size
		s.Iterations = m.Count
		s.Warmup = m.Warmup
		specs = append(specs, s)
	}
	if b := m.Bandwidth; b != nil {
		s := base
		s.Measure = rdma.MeasureBandwidth
		s.Size = b.Size
		s.Duration = rdma.Duration(b.Duration)
		s.TxDepth = b.TxDepth
		specs = append(specs, s)
	}
	tests := make([]rdma.Test, len(specs))
	for i, s := range specs {
		t, err := s.Complete()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", s.Measure, units.FormatBytes(uint64(t.Size)), err)
		}
		tests[i] = t
	}
	return tests, nil
}

// stallTimeout is how long the engine waits on a silent peer: half the
// module's timeout, so that the verbs loop gives up first and frees its
// QPs, and the probe's context, ending at the timeout, only has the
// control channel left to close. A dead target costs at most the timeout,
// not rdma's default stall time.
func (m Module) stallTimeout() rdma.Duration { return rdma.Duration(m.Timeout / 2) }

// lossTimeout is how long a UD probe waits for an answer before it counts
// the round trip lost and moves on: a tenth of the timeout, so that a few
// losses fit in a probe, and a path that answers nothing (the stall
// timeout, half the timeout, of silence) ends the probe with its loss
// counted before the probe's own deadline. The engine ignores it on RC
// and UC.
func (m Module) lossTimeout() rdma.Duration { return rdma.Duration(m.Timeout / 10) }

// The defaults a module's key that is absent takes.
var (
	defaultModule = moduleYAML{
		// write_imm rather than write: in event mode the target of a plain
		// WRITE gets no completion, so a write ping-pong cannot run there.
		Op:       "write_imm",
		Mode:     "event", // a probing daemon must not burn a core polling
		Connect:  "exchange",
		QP:       defaultQP,
		Count:    10,
		Interval: 15 * time.Second,
		Timeout:  5 * time.Second,
	}
	defaultQP = qpYAML{
		Type: "rc",
		// Fewer retries than rdma's 6, so a dead peer shows as an error
		// completion well inside the probe timeout.
		RetryCnt: 3,
	}
	defaultBandwidth = bandwidthYAML{Size: "1MiB", Duration: time.Second, Interval: 5 * time.Minute}
)

// maxBandwidthDuty keeps bandwidth probes, which fill the link for their
// duration, from becoming a load of their own: a probe may take at most
// this fraction of its interval.
const maxBandwidthDuty = 10

// defaultWarmup is a tenth of count, as rdma's default, but at least one
// round trip: a run's first round trip pays for waking both ends and is
// several times the others (on the testbed, perftest's first as much as
// ours), so a probe of fewer than 10 would otherwise record it every time.
func defaultWarmup(count int) int { return max(1, min(100, count/10)) }

// maxCount bounds a probe's round trips. A probe holds both ends' QPs and
// a core for its whole run, and its samples in memory: 100,000 round
// trips take about 0.2 s on hardware and seconds under emulation, beyond
// what a health probe needs.
const maxCount = 100_000

// moduleYAML is a module as written: names and sizes as text, turned into
// a Module by module(), which knows nothing of the module's name; the
// caller adds it to errors.
type moduleYAML struct {
	Op        string         `yaml:"op" want:"an op such as write_imm"`
	Sizes     []string       `yaml:"sizes" want:"a list of sizes such as [2, 4KiB]" item:"a size such as 4KiB"`
	Mode      string         `yaml:"mode" want:"a mode such as event"`
	QP        qpYAML         `yaml:"qp"`
	Connect   string         `yaml:"connect" want:"a way to connect such as exchange"`
	Count     int            `yaml:"count"`
	Warmup    *int           `yaml:"warmup"` // nil: defaultWarmup(count)
	Interval  time.Duration  `yaml:"interval"`
	Timeout   time.Duration  `yaml:"timeout"`
	Bandwidth *bandwidthYAML `yaml:"bandwidth"`
	TLS       ClientTLS      `yaml:"tls"`
}

// qpYAML's absent keys are nil, so that a written 0 is kept.
type qpYAML struct {
	Type     string `yaml:"type" want:"a QP type such as rc"`
	Timeout  *int   `yaml:"timeout"`
	RetryCnt int    `yaml:"retry_cnt"`
	RNRRetry *int   `yaml:"rnr_retry"`
	MTU      *int   `yaml:"mtu"`
}

type bandwidthYAML struct {
	Size     string        `yaml:"size" want:"a size such as 1MiB"`
	Duration time.Duration `yaml:"duration"`
	Interval time.Duration `yaml:"interval"`
	TxDepth  int           `yaml:"tx_depth"`
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (m *moduleYAML) UnmarshalYAML(unmarshal func(any) error) error {
	*m = defaultModule
	type plain moduleYAML
	return unmarshal((*plain)(m))
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (q *qpYAML) UnmarshalYAML(unmarshal func(any) error) error {
	*q = defaultQP
	type plain qpYAML
	return unmarshal((*plain)(q))
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *bandwidthYAML) UnmarshalYAML(unmarshal func(any) error) error {
	*b = defaultBandwidth
	type plain bandwidthYAML
	return unmarshal((*plain)(b))
}

func (m moduleYAML) module() (Module, error) {
	op, err := rdma.ParseOp(m.Op)
	if err != nil {
		return Module{}, err
	}
	mode, err := rdma.ParseMode(m.Mode)
	if err != nil {
		return Module{}, err
	}
	qpType, err := rdma.ParseQPType(m.QP.Type)
	if err != nil {
		return Module{}, err
	}
	connect, err := rdma.ParseConnect(m.Connect)
	if err != nil {
		return Module{}, err
	}
	out := Module{
		Op:       op,
		Mode:     mode,
		Connect:  connect,
		QP:       QP{Type: qpType, Timeout: m.QP.Timeout, RetryCnt: m.QP.RetryCnt, RNRRetry: m.QP.RNRRetry, MTU: m.QP.MTU},
		Count:    m.Count,
		Interval: m.Interval,
		Timeout:  m.Timeout,
	}
	if err := out.QP.settings().Validate(); err != nil {
		return Module{}, err
	}
	switch {
	case m.Sizes == nil && op.Atomic():
		out.Sizes = []int{8} // the only size an atomic has
	case m.Sizes == nil:
		out.Sizes = []int{2}
	case len(m.Sizes) == 0:
		return Module{}, errors.New("sizes is empty; omit it for the default [2]")
	}
	for _, s := range m.Sizes {
		n, err := parseSize(s)
		if err != nil {
			return Module{}, err
		}
		if slices.Contains(out.Sizes, n) {
			return Module{}, fmt.Errorf("size %s is listed twice", s)
		}
		out.Sizes = append(out.Sizes, n)
	}
	if m.Count < 1 || m.Count > maxCount {
		return Module{}, fmt.Errorf("count %d: want 1 to %d round trips per probe (more is a benchmark: rdmarun bench)", m.Count, maxCount)
	}
	out.Warmup = defaultWarmup(m.Count)
	if m.Warmup != nil {
		out.Warmup = *m.Warmup
	}
	if out.Warmup < 1 || out.Warmup > maxCount {
		return Module{}, fmt.Errorf("warmup %d: want 1 to %d round trips before the measured ones (a run's first round trip is its slowest: perftest leaves it out too)", out.Warmup, maxCount)
	}
	if m.Interval <= 0 {
		return Module{}, fmt.Errorf("interval %v must be positive", m.Interval)
	}
	if m.Timeout <= 0 {
		return Module{}, fmt.Errorf("timeout %v must be positive", m.Timeout)
	}
	if m.Timeout >= m.Interval {
		// Otherwise a slow round would still run when the next one starts.
		return Module{}, fmt.Errorf("timeout %v must be shorter than interval %v", m.Timeout, m.Interval)
	}
	if b := m.Bandwidth; b != nil {
		size, err := parseSize(b.Size)
		if err != nil {
			return Module{}, fmt.Errorf("bandwidth: %w", err)
		}
		if b.Duration <= 0 {
			return Module{}, fmt.Errorf("bandwidth: duration %v must be positive", b.Duration)
		}
		if b.Interval < maxBandwidthDuty*b.Duration {
			return Module{}, fmt.Errorf("bandwidth: interval %v is shorter than %d x duration %v; a bandwidth probe fills the link while it runs, so it may take at most 1/%d of the time",
				b.Interval, maxBandwidthDuty, b.Duration, maxBandwidthDuty)
		}
		if b.TxDepth < 0 {
			return Module{}, fmt.Errorf("bandwidth: tx_depth %d must be positive (or 0 for the default)", b.TxDepth)
		}
		out.Bandwidth = &Bandwidth{Size: size, Duration: b.Duration, Interval: b.Interval, TxDepth: b.TxDepth}
	}
	if (m.TLS.CertFile == "") != (m.TLS.KeyFile == "") {
		return Module{}, errors.New("tls: cert_file and key_file go together")
	}
	out.TLS = m.TLS
	// Complete the tests now, so that a combination rdma cannot run (read
	// on UC, write latency in event mode) fails the load, not every probe.
	if out.Tests, err = out.tests(); err != nil {
		return Module{}, err
	}
	return out, nil
}

func parseSize(s string) (int, error) {
	n, err := units.ParseBytes(s)
	if err != nil {
		return 0, err
	}
	// rdma's own limit; checked here too so the int conversion is safe.
	if n < 1 || n > 1<<30 {
		return 0, fmt.Errorf("size %s is outside 1B..1GiB", s)
	}
	return int(n), nil
}
