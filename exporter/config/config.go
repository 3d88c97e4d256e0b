// Package config reads rdma_exporter's YAML configuration: the modules that
// say how to probe, the targets to probe and the built-in responder.
//
// Defaults and checks live in the types' UnmarshalYAML methods, as in
// blackbox_exporter, so a file that loads is a file that can run: every
// module's test specs already passed rdma's own checks.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
	"go.yaml.in/yaml/v3"
)

// Config is a whole configuration file.
type Config struct {
	Modules   map[string]Module
	Targets   Targets
	Responder Responder
}

// Module says how one target is probed: a round of Count latency probes per
// size every Interval, and optionally a bandwidth probe on a slower schedule.
type Module struct {
	Op       rdma.Op
	Mode     rdma.Mode
	Sizes    []int // bytes
	QP       QP
	Count    int           // latency probes per size and round
	Interval time.Duration // between rounds
	Timeout  time.Duration // a round that takes longer fails
	// Bandwidth is nil when the module runs no bandwidth probe.
	Bandwidth *Bandwidth
	// TLS is how the prober reaches responders that serve TLS; the zero
	// value dials plain TCP.
	TLS ClientTLS
}

// ClientTLS is the prober's side of a responder's TLS: the CA that signed
// the responders' certificates, and a client certificate when they ask
// for one (client_ca_file on their side).
type ClientTLS struct {
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"` // default: the host of the target's address
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

// QP holds the queue pair settings of a module. A zero Timeout, RNRRetry or
// MTU leaves rdma's default (MTU: the port's active MTU).
type QP struct {
	Type     rdma.QPType
	Timeout  int
	RetryCnt int
	RNRRetry int
	MTU      int
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

// Specs returns the tests one round of the module runs: a latency test per
// size, then the bandwidth test if there is one. The caller still applies
// WithDefaults, as for any spec.
func (m Module) Specs() []rdma.TestSpec {
	base := rdma.TestSpec{
		Op:     m.Op,
		Mode:   m.Mode,
		QPType: m.QP.Type,
		// A silent peer must cost at most the module's timeout, not rdma's
		// default stall time.
		StallTimeout: rdma.Duration(m.Timeout),
		QP: rdma.QPAttrs{
			MTU:      m.QP.MTU,
			Timeout:  m.QP.Timeout,
			RetryCnt: m.QP.RetryCnt,
			RNRRetry: m.QP.RNRRetry,
		},
	}
	specs := make([]rdma.TestSpec, 0, len(m.Sizes)+1)
	for _, size := range m.Sizes {
		s := base
		s.Measure = rdma.MeasureLatency
		s.Size = size
		s.Iterations = m.Count
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
	return specs
}

// Targets lists who to probe. Targets from files are read by
// LoadTargetFile; DNS names are resolved by the caller.
type Targets struct {
	Static []Target    `yaml:"static"`
	Files  []string    `yaml:"files"`
	DNS    []DNSTarget `yaml:"dns"`
	// MaxProbesPerSecond caps the probes sent to each single target, so a
	// module with a short interval cannot flood one peer.
	MaxProbesPerSecond float64 `yaml:"max_probes_per_second"`
	// Jitter is the fraction of an interval by which each round is shifted
	// at random, so that many exporters started together do not probe in step.
	Jitter float64 `yaml:"jitter"`
}

// Target is one peer, reached at Address (host:port of its responder).
type Target struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address"`
	Module  string `yaml:"module"`
	Device  string `yaml:"device"` // local device to probe from; empty: the first one
}

// DNSTarget is a name resolved to targets again every Refresh: an SRV name
// (_service._proto.domain, which carries its own ports) or a host name
// whose A/AAAA records are probed on Port.
type DNSTarget struct {
	Name    string        `yaml:"name"`
	Port    int           `yaml:"port"`
	Module  string        `yaml:"module"`
	Device  string        `yaml:"device"`
	Refresh time.Duration `yaml:"refresh"`
}

// SRV reports whether the name is looked up as an SRV record.
func (d DNSTarget) SRV() bool { return strings.HasPrefix(d.Name, "_") }

// Responder is the in-process responder that lets other exporters probe
// this node.
type Responder struct {
	Enabled   bool   `yaml:"enabled"`
	Listen    string `yaml:"listen"`
	Device    string `yaml:"device"`
	TokenFile string `yaml:"token_file"`
	TLS       TLS    `yaml:"tls"`
}

// TLS protects the responder's control channel, which carries rkeys.
type TLS struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
}

// The defaults a key that is absent takes.
var (
	defaultModule = moduleYAML{
		// write_imm rather than write: in event mode the target of a plain
		// WRITE gets no completion, so a write ping-pong cannot run there.
		Op:       "write_imm",
		Mode:     "event", // a probing daemon must not burn a core polling
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
	defaultTargets   = Targets{MaxProbesPerSecond: 10, Jitter: 0.1}
	defaultResponder = Responder{Enabled: true, Listen: ":18520"}
	defaultDNSTarget = DNSTarget{Refresh: 30 * time.Second}
)

// maxBandwidthDuty keeps bandwidth probes, which fill the link for their
// duration, from becoming a load of their own: a probe may take at most
// this fraction of its interval.
const maxBandwidthDuty = 10

// Load reads and checks the configuration file at path. Relative paths in
// it (target files, token and TLS files) are taken relative to the file's
// directory, so the config works from any working directory.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.resolvePaths(filepath.Dir(path))
	// The files are read now, so that a missing CA fails the load (and a
	// reload keeps the old config) instead of every probe.
	for _, name := range slices.Sorted(maps.Keys(c.Modules)) {
		if t := c.Modules[name].TLS; t.Enabled() {
			if err := t.Ctrl().Validate(); err != nil {
				return nil, fmt.Errorf("config %s: module %q: tls: %w", path, name, err)
			}
		}
	}
	return c, nil
}

// Parse reads a configuration from YAML. Unknown keys are errors, since a
// misspelt key silently taking its default is worse than a failed load.
func Parse(b []byte) (*Config, error) {
	c := &Config{}
	if err := decodeStrict(b, c); err != nil {
		if errors.Is(err, io.EOF) {
			// An empty file is a node that only answers probes.
			return &Config{Targets: defaultTargets, Responder: defaultResponder}, nil
		}
		return nil, err
	}
	return c, nil
}

func decodeStrict(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// LoadTargetFile reads a file of targets: a YAML list shaped like the
// static targets of the config. It cannot know the configured modules, so
// the caller checks those with Config.CheckTargets.
func LoadTargetFile(path string) ([]Target, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ts, err := ParseTargets(b)
	if err != nil {
		return nil, fmt.Errorf("targets file %s: %w", path, err)
	}
	return ts, nil
}

// ParseTargets reads a targets file's contents: a YAML list of targets
// shaped like targets.static, names unique. An empty file is no targets.
func ParseTargets(b []byte) ([]Target, error) {
	var ts []Target
	if err := decodeStrict(b, &ts); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	seen := map[string]bool{}
	for _, t := range ts {
		if seen[t.Name] {
			return nil, fmt.Errorf("duplicate target name %q", t.Name)
		}
		seen[t.Name] = true
	}
	return ts, nil
}

// CheckTargets reports the first target whose module is not configured.
func (c *Config) CheckTargets(ts []Target) error {
	for _, t := range ts {
		if err := c.checkModule("target", t.Name, t.Module); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkModule(kind, name, module string) error {
	if _, ok := c.Modules[module]; ok {
		return nil
	}
	names := make([]string, 0, len(c.Modules))
	for n := range c.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	return fmt.Errorf("%s %q: module %q is not defined; modules: %s", kind, name, module, list)
}

func (c *Config) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range c.Targets.Files {
		abs(&c.Targets.Files[i])
	}
	for name, m := range c.Modules {
		abs(&m.TLS.CAFile)
		abs(&m.TLS.CertFile)
		abs(&m.TLS.KeyFile)
		c.Modules[name] = m
	}
	abs(&c.Responder.TokenFile)
	abs(&c.Responder.TLS.CertFile)
	abs(&c.Responder.TLS.KeyFile)
	abs(&c.Responder.TLS.ClientCAFile)
}

// UnmarshalYAML implements yaml.Unmarshaler. It uses the older
// function-argument form on purpose: yaml.Node.Decode starts a fresh
// decoder that forgets KnownFields, the function form keeps it.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	type plain struct {
		Modules   map[string]moduleYAML `yaml:"modules"`
		Targets   Targets               `yaml:"targets"`
		Responder Responder             `yaml:"responder"`
	}
	raw := plain{Targets: defaultTargets, Responder: defaultResponder}
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*c = Config{Targets: raw.Targets, Responder: raw.Responder, Modules: make(map[string]Module, len(raw.Modules))}
	// Sorted, so that of several bad modules the same one is reported
	// every time.
	names := make([]string, 0, len(raw.Modules))
	for n := range raw.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		m, err := raw.Modules[n].module()
		if err != nil {
			return fmt.Errorf("module %q: %w", n, err)
		}
		c.Modules[n] = m
	}
	if err := c.CheckTargets(c.Targets.Static); err != nil {
		return err
	}
	for _, d := range c.Targets.DNS {
		if err := c.checkModule("dns target", d.Name, d.Module); err != nil {
			return err
		}
	}
	return nil
}

// moduleYAML is a module as written: names and sizes as text, turned into
// a Module by module(), which knows nothing of the module's name; the
// caller adds it to errors.
type moduleYAML struct {
	Op        string         `yaml:"op"`
	Sizes     []string       `yaml:"sizes"`
	Mode      string         `yaml:"mode"`
	QP        qpYAML         `yaml:"qp"`
	Count     int            `yaml:"count"`
	Interval  time.Duration  `yaml:"interval"`
	Timeout   time.Duration  `yaml:"timeout"`
	Bandwidth *bandwidthYAML `yaml:"bandwidth"`
	TLS       ClientTLS      `yaml:"tls"`
}

type qpYAML struct {
	Type     string `yaml:"type"`
	Timeout  int    `yaml:"timeout"`
	RetryCnt int    `yaml:"retry_cnt"`
	RNRRetry int    `yaml:"rnr_retry"`
	MTU      int    `yaml:"mtu"`
}

type bandwidthYAML struct {
	Size     string        `yaml:"size"`
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
	out := Module{
		Op:       op,
		Mode:     mode,
		QP:       QP{Type: qpType, Timeout: m.QP.Timeout, RetryCnt: m.QP.RetryCnt, RNRRetry: m.QP.RNRRetry, MTU: m.QP.MTU},
		Count:    m.Count,
		Interval: m.Interval,
		Timeout:  m.Timeout,
	}
	// rdma reads a zero attribute as "its default", so a written 0 would
	// silently become 6 retries; refuse it rather than surprise.
	if m.QP.RetryCnt < 1 || m.QP.RetryCnt > 7 {
		return Module{}, fmt.Errorf("qp: retry_cnt %d is outside 1..7", m.QP.RetryCnt)
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
	if m.Count < 1 {
		return Module{}, fmt.Errorf("count %d: want at least 1 probe per round", m.Count)
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
	// Check the specs now, so that a combination rdma cannot run (read on
	// UC, write latency in event mode) fails the load, not every probe.
	for _, s := range out.Specs() {
		if err := s.WithDefaults().Check(); err != nil {
			return Module{}, fmt.Errorf("%s %s: %w", s.Measure, units.FormatBytes(uint64(s.Size)), err)
		}
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

// UnmarshalYAML implements yaml.Unmarshaler.
func (t *Targets) UnmarshalYAML(unmarshal func(any) error) error {
	*t = defaultTargets
	type plain Targets
	if err := unmarshal((*plain)(t)); err != nil {
		return err
	}
	if !(t.MaxProbesPerSecond > 0) { // also refuses NaN
		return fmt.Errorf("targets: max_probes_per_second %v must be positive", t.MaxProbesPerSecond)
	}
	// Beyond half an interval, shifted rounds of one target could overlap.
	if !(t.Jitter >= 0 && t.Jitter <= 0.5) {
		return fmt.Errorf("targets: jitter %v is outside 0..0.5", t.Jitter)
	}
	for _, f := range t.Files {
		if f == "" {
			return errors.New("targets: files has an empty path")
		}
	}
	// Names become the target label; two targets with one name would
	// write into each other's series.
	seen := map[string]bool{}
	for _, n := range targetNames(t) {
		if seen[n] {
			return fmt.Errorf("targets: duplicate target name %q", n)
		}
		seen[n] = true
	}
	return nil
}

func targetNames(t *Targets) []string {
	names := make([]string, 0, len(t.Static)+len(t.DNS))
	for _, s := range t.Static {
		names = append(names, s.Name)
	}
	for _, d := range t.DNS {
		names = append(names, d.Name)
	}
	return names
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (t *Target) UnmarshalYAML(unmarshal func(any) error) error {
	*t = Target{}
	type plain Target
	if err := unmarshal((*plain)(t)); err != nil {
		return err
	}
	if t.Name == "" {
		return fmt.Errorf("target with address %q: name is required", t.Address)
	}
	if t.Module == "" {
		return fmt.Errorf("target %q: module is required", t.Name)
	}
	if err := checkHostPort(t.Address, false); err != nil {
		return fmt.Errorf("target %q: %w", t.Name, err)
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *DNSTarget) UnmarshalYAML(unmarshal func(any) error) error {
	*d = defaultDNSTarget
	type plain DNSTarget
	if err := unmarshal((*plain)(d)); err != nil {
		return err
	}
	switch {
	case d.Name == "":
		return errors.New("dns target: name is required")
	case d.Module == "":
		return fmt.Errorf("dns target %q: module is required", d.Name)
	case d.SRV() && d.Port != 0:
		return fmt.Errorf("dns target %q: an SRV name carries its own ports; remove port %d", d.Name, d.Port)
	case !d.SRV() && (d.Port < 1 || d.Port > 65535):
		return fmt.Errorf("dns target %q: port is required for an A/AAAA name (1..65535); only SRV names (_service._proto.domain) carry their own", d.Name)
	case d.Refresh < time.Second:
		return fmt.Errorf("dns target %q: refresh %v is shorter than 1s", d.Name, d.Refresh)
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Responder) UnmarshalYAML(unmarshal func(any) error) error {
	*r = defaultResponder
	type plain Responder
	if err := unmarshal((*plain)(r)); err != nil {
		return err
	}
	if err := checkHostPort(r.Listen, true); err != nil {
		return fmt.Errorf("responder: listen: %w", err)
	}
	tls := r.TLS
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		return errors.New("responder: tls: cert_file and key_file go together")
	}
	if tls.ClientCAFile != "" && tls.CertFile == "" {
		return errors.New("responder: tls: client_ca_file needs cert_file and key_file")
	}
	return nil
}

// checkHostPort accepts host:port with a numeric port; a listen address
// may leave the host empty (all interfaces).
func checkHostPort(addr string, listen bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		why := err.Error()
		if ae, ok := err.(*net.AddrError); ok {
			why = ae.Err // the address itself is already in our message
		}
		return fmt.Errorf("address %q must be host:port (%s)", addr, why)
	}
	if host == "" && !listen {
		return fmt.Errorf("address %q has no host", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("address %q: port %q is not a number in 1..65535", addr, port)
	}
	return nil
}
