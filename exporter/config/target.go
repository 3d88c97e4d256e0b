package config

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"net"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// Targets lists who to probe. Targets from files are read by
// LoadTargetFile; DNS names are resolved by the caller.
type Targets struct {
	Static []Target    `yaml:"static" want:"a list of targets such as [{name: n1, address: 10.0.0.1:18520, module: default}]"`
	Files  []string    `yaml:"files" want:"a list of file paths such as [targets.d/rack1.yml]" item:"a file path"`
	DNS    []DNSTarget `yaml:"dns" want:"a list of names to look up such as [{name: _rdma._tcp.example, module: default}]"`
	// MaxProbesPerSecond caps the probes sent to each single target, so a
	// module with a short interval cannot flood one peer.
	MaxProbesPerSecond float64 `yaml:"max_probes_per_second"`
	// Jitter is the fraction of an interval by which each round is shifted
	// at random, so that many exporters started together do not probe in step.
	Jitter float64 `yaml:"jitter"`
	// MaxPerModule bounds the targets probed with one module, and
	// MaxProbeSeries the probe series (a target probed with one spec of
	// its module: 13 series on /metrics each) over all modules: a target
	// file or DNS name gone wrong must not grow the exporter's memory,
	// its probes and its scrapes without end. Targets beyond either are
	// not probed, and are counted and logged.
	MaxPerModule   int `yaml:"max_per_module"`
	MaxProbeSeries int `yaml:"max_probe_series"`
}

// Target is one peer, reached at Address (host:port of its responder).
type Target struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address" want:"host:port such as 10.0.0.1:18520"`
	Module  string `yaml:"module"`
	Device  string `yaml:"device"` // local device to probe from; empty: the first one
	// DevicePort is the port of the local device the probes go from,
	// and the port label of their series. Not "port": a DNS target's
	// port is its responders' TCP port.
	DevicePort int `yaml:"device_port"`
	// Labels place the target in the fleet (rack, rail, tor...), for the
	// mesh's always selectors.
	Labels Labels `yaml:"labels" want:"a mapping of label name to value, such as labels: {rack: r1}" item:"a label value such as r1"`
}

// DNSTarget is a name resolved to targets again every Refresh: an SRV name
// (_service._proto.domain, which carries its own ports) or a host name
// whose A/AAAA records are probed on Port.
type DNSTarget struct {
	Name   string `yaml:"name"`
	Port   int    `yaml:"port"`
	Module string `yaml:"module"`
	Device string `yaml:"device"`
	// DevicePort is the local device's port, as for a Target.
	DevicePort int           `yaml:"device_port"`
	Refresh    time.Duration `yaml:"refresh"`
}

// SRV reports whether the name is looked up as an SRV record.
func (d DNSTarget) SRV() bool { return strings.HasPrefix(d.Name, "_") }

// DefaultDevicePort is the device port probes go from unless a target
// says otherwise: the first, as rdma takes it.
const DefaultDevicePort = 1

// The defaults of the targets' keys that are absent.
var (
	defaultTargets   = Targets{MaxProbesPerSecond: 10, Jitter: 0.1, MaxPerModule: 1000, MaxProbeSeries: 5000}
	defaultTarget    = Target{DevicePort: DefaultDevicePort}
	defaultDNSTarget = DNSTarget{DevicePort: DefaultDevicePort, Refresh: 30 * time.Second}
)

// LoadTargetFile reads a file of targets: a YAML list shaped like the
// static targets of the config. It cannot know the configured modules, so
// the caller checks those with Config.CheckTargets.
func LoadTargetFile(path string) ([]Target, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ts, err := parseTargets(path, b)
	if err != nil {
		return nil, inFile("targets file", path, err)
	}
	return ts, nil
}

// ParseTargets reads a targets file's contents: a YAML list of targets
// shaped like targets.static, names unique. An empty file is no targets.
func ParseTargets(b []byte) ([]Target, error) { return parseTargets("", b) }

func parseTargets(name string, b []byte) ([]Target, error) {
	root, err := checkShape(name, b, reflect.TypeFor[[]Target](), targetFileSchema)
	if err != nil || isEmpty(root) {
		return nil, err
	}
	var ts []Target
	if err := decodeStrict(b, &ts); err != nil {
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

var targetFileSchema = yamlerr.Schema{As: shapes, Want: "a list of targets, as under targets.static, such as [{name: n1, address: 10.0.0.1:18520, module: default}]"}

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
	if t.MaxPerModule < 1 {
		return fmt.Errorf("targets: max_per_module %d must be at least 1 (the default is %d)", t.MaxPerModule, defaultTargets.MaxPerModule)
	}
	if t.MaxProbeSeries < 1 {
		return fmt.Errorf("targets: max_probe_series %d must be at least 1 (the default is %d)", t.MaxProbeSeries, defaultTargets.MaxProbeSeries)
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
	*t = defaultTarget
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
	if err := checkDevicePort(t.DevicePort); err != nil {
		return fmt.Errorf("target %q: %w", t.Name, err)
	}
	if err := t.Labels.err; err != nil {
		return fmt.Errorf("target %q: labels: %w", t.Name, err)
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
	if err := checkDevicePort(d.DevicePort); err != nil {
		return fmt.Errorf("dns target %q: %w", d.Name, err)
	}
	return nil
}

// checkDevicePort refuses a port a device cannot have; an absent key has
// already taken DefaultDevicePort, so a written 0 is an error too.
func checkDevicePort(p int) error {
	if p < 1 || p > 255 {
		return fmt.Errorf("device_port %d is outside 1..255", p)
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

// Labels is a set of label names and values. It is a value, not a map, so
// that Target stays comparable: discovery compares targets with == to see
// what changed, and a map field would make that a compile error. The zero
// value is no labels.
type Labels struct {
	// pairs is name=value for every label, sorted by name and joined by
	// NUL: names cannot hold '=' or NUL and values cannot hold NUL, so
	// equal sets are equal strings.
	pairs string
	// err is the reason the YAML was refused, kept for the Target that
	// holds it to report under its own name.
	err error
}

// labelName is Prometheus' rule for label names, since the names may end
// up as labels of the probe series.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// NewLabels checks and converts a map of labels.
func NewLabels(m map[string]string) (Labels, error) {
	if err := checkLabels(m); err != nil {
		return Labels{}, err
	}
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte(0)
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(m[n])
	}
	return Labels{pairs: b.String()}, nil
}

// checkLabels reports the first (by name) label with a bad name or an
// empty value; an empty value would be indistinguishable from an absent
// label to a selector.
func checkLabels(m map[string]string) error {
	for _, n := range slices.Sorted(maps.Keys(m)) {
		if !labelName.MatchString(n) {
			return fmt.Errorf("label name %q is invalid; use letters, digits and _, not starting with a digit", n)
		}
		switch v := m[n]; {
		case v == "":
			return fmt.Errorf("label %q has an empty value; give it one or remove the label", n)
		case strings.IndexByte(v, 0) >= 0:
			return fmt.Errorf("label %q: value %q holds a NUL byte; remove it", n, v)
		}
	}
	return nil
}

// Get returns the value of the label name, "" when there is none.
func (l Labels) Get(name string) string {
	for rest := l.pairs; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "\x00")
		if n, v, _ := strings.Cut(pair, "="); n == name {
			return v
		}
	}
	return ""
}

// All yields every label, sorted by name.
func (l Labels) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for rest := l.pairs; rest != ""; {
			var pair string
			pair, rest, _ = strings.Cut(rest, "\x00")
			n, v, _ := strings.Cut(pair, "=")
			if !yield(n, v) {
				return
			}
		}
	}
}

// Map returns the labels as a new map; nil when there are none.
func (l Labels) Map() map[string]string {
	if l.pairs == "" {
		return nil
	}
	m := map[string]string{}
	for n, v := range l.All() {
		m[n] = v
	}
	return m
}

// String formats the labels as Prometheus does: {rack="r1", tor="t3"}.
func (l Labels) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for n, v := range l.All() {
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.WriteString(n + "=" + strconv.Quote(v))
	}
	b.WriteByte('}')
	return b.String()
}

// UnmarshalYAML implements yaml.Unmarshaler. A bad label is kept as an
// error for Target.UnmarshalYAML, which names the target.
func (l *Labels) UnmarshalYAML(unmarshal func(any) error) error {
	var m map[string]string
	if err := unmarshal(&m); err != nil {
		return err
	}
	var err error
	if *l, err = NewLabels(m); err != nil {
		*l = Labels{err: err}
	}
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (l Labels) MarshalYAML() (any, error) { return l.Map(), nil }
