package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
	"unicode"
)

// Mesh bounds what one node probes in a large fleet: instead of every
// discovered target, a sample of MaxTargets that rotates every Rotate, so
// that the probes of a fleet grow with its size, not with its square.
type Mesh struct {
	// MaxTargets is the size of the sample; 0 turns the mesh off and the
	// node probes every target, as before the mesh existed.
	MaxTargets int `yaml:"max_targets"`
	// Rotate is how long one sample lasts. 0 only when the mesh section
	// is absent (then the mesh is off); written, at least a minute.
	Rotate time.Duration `yaml:"rotate"`
	// Source is this node's name among the targets. Not defaulted here:
	// the daemon takes its flag, then this, then DefaultSource.
	Source string `yaml:"source"`
	// Labels are this node's own labels (rack, rail, tor...), which the
	// Always selectors' same compares with the targets' labels.
	Labels map[string]string `yaml:"labels"`
	// Always keeps the peers that match any selector in the set on top
	// of the sample.
	Always []MeshSelector `yaml:"always"`
	// MaxProbesPerSecond is the whole node's probe budget, all modules and
	// targets together; 0 means no node-wide cap (the per-target
	// targets.max_probes_per_second still applies).
	MaxProbesPerSecond float64 `yaml:"max_probes_per_second"`
}

// MeshSelector keeps peers in the set on top of the sample. With both
// keys, a peer must satisfy both.
type MeshSelector struct {
	// Same names labels whose values must equal this node's (same rack).
	Same []string `yaml:"same" want:"a list of label names such as [rack]" item:"a label name such as rack"`
	// Match lists labels the peer must carry with these values.
	Match map[string]string `yaml:"match" want:"a mapping of label name to value, such as match: {tor: t1}" item:"a label value such as t1"`
}

// Enabled reports whether the mesh samples the targets at all.
func (m Mesh) Enabled() bool { return m.MaxTargets > 0 }

// DefaultRotate is how long a sample lasts when rotate is not written: long
// enough that a sample's series have many points for rates and alerts. Every
// pair is probed after about 900 periods for 1,000 nodes with max_targets 16
// (five weeks at this default), so a fleet that wants every path seen sooner
// rotates faster.
const DefaultRotate = time.Hour

// minRotate keeps the set from changing faster than its series can be
// scraped and alerted on: each change starts and stops probe series.
const minRotate = time.Minute

// DefaultSource is this node's name when neither flag nor config names it:
// the host name up to its first dot, as node names in a fleet usually are,
// and "localhost" when there is none.
func DefaultSource() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	// "(none)" is what a kernel whose host name was never set reports
	// (a container or VM without one): not a name to join on.
	if h, _, _ = strings.Cut(h, "."); h == "" || h == "(none)" {
		return "localhost"
	}
	return h
}

// meshYAML is Mesh as written, with Source a pointer so that a written
// empty source is told apart from an absent one.
type meshYAML struct {
	MaxTargets         int               `yaml:"max_targets"`
	Rotate             time.Duration     `yaml:"rotate"`
	Source             *string           `yaml:"source" want:"this node's name as its targets list it"`
	Labels             map[string]string `yaml:"labels" want:"a mapping of label name to value, such as labels: {rack: r1}" item:"a label value such as r1"`
	Always             []MeshSelector    `yaml:"always" want:"a list of selectors such as [{same: [rack]}]"`
	MaxProbesPerSecond float64           `yaml:"max_probes_per_second"`
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (m *Mesh) UnmarshalYAML(unmarshal func(any) error) error {
	raw := meshYAML{Rotate: DefaultRotate}
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*m = Mesh{MaxTargets: raw.MaxTargets, Rotate: raw.Rotate, Labels: raw.Labels, Always: raw.Always, MaxProbesPerSecond: raw.MaxProbesPerSecond}
	if raw.Source != nil {
		m.Source = *raw.Source
		switch {
		case m.Source == "":
			return errors.New("mesh.source: is empty; name this node or remove the key to take the host name")
		case strings.ContainsFunc(m.Source, unicode.IsSpace):
			return fmt.Errorf("mesh.source: %q holds white space; use the node's name as its targets list it", m.Source)
		}
	}
	if m.MaxTargets < 0 {
		return fmt.Errorf("mesh.max_targets: %d is negative; use 0 to probe every target, or the number of peers each node samples", m.MaxTargets)
	}
	if m.Rotate < minRotate {
		return fmt.Errorf("mesh.rotate: %v is shorter than %v; every rotation starts and stops probe series, so rotate at most once a minute", m.Rotate, minRotate)
	}
	if p := m.MaxProbesPerSecond; math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		return fmt.Errorf("mesh.max_probes_per_second: %v must be a finite number >= 0; 0 sets no node-wide cap", p)
	}
	if err := checkLabels(m.Labels); err != nil {
		return fmt.Errorf("mesh.labels: %w", err)
	}
	for i, s := range m.Always {
		if err := s.check(m.Labels); err != nil {
			return fmt.Errorf("mesh.always[%d]%w", i, err)
		}
	}
	return nil
}

// check returns an error that starts with the key it is about (".same" or
// ": "), for the caller to prefix with the selector's place.
func (s MeshSelector) check(own map[string]string) error {
	if len(s.Same) == 0 && len(s.Match) == 0 {
		return errors.New(": a selector needs same or match; say which peers to keep, or remove the selector")
	}
	for _, n := range s.Same {
		if _, ok := own[n]; !ok {
			return fmt.Errorf(".same: label %q is not in mesh.labels; add it there or remove it", n)
		}
	}
	if err := checkLabels(s.Match); err != nil {
		return fmt.Errorf(".match: %w", err)
	}
	return nil
}
