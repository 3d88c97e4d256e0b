package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

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
	// DevicePort is the port of the local device the probes go from,
	// and the port label of their series. Not "port": a DNS target's
	// port is its responders' TCP port.
	DevicePort int `yaml:"device_port"`
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
	defaultTargets   = Targets{MaxProbesPerSecond: 10, Jitter: 0.1}
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
