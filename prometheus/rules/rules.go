// Package rules ships rdmarun_exporter's Prometheus recording and alerting
// rules (the YAML files in this directory) and rewrites them for tests.
//
// The shipped alerts wait minutes (`for: 10m`, `rate(...[5m])`, a 15m
// staleness threshold) because that is what keeps them quiet on a real
// fabric. An end-to-end test cannot wait that long, and must not test
// edited copies of the rules by hand, or it would test something other
// than what ships. Rewrite produces a copy of the shipped files with only
// the durations and thresholds the test asks for changed; every other
// value (expressions, labels, annotations) stays what ships.
package rules

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

//go:embed *.yml
var shipped embed.FS

// File is one parsed rule file.
type File struct {
	Name   string  // file name, e.g. rdma-alerts.yml
	Groups []Group `yaml:"groups"`
}

// Group is a rule group.
type Group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is a recording rule (Record set) or an alerting rule (Alert set).
type Rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Names lists the shipped rule files, sorted.
func Names() []string {
	entries, err := fs.ReadDir(shipped, ".")
	if err != nil {
		panic(err) // the embedded directory always reads
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Read returns a shipped rule file's bytes.
func Read(name string) ([]byte, error) {
	return shipped.ReadFile(name)
}

// Load parses every shipped rule file.
func Load() ([]File, error) {
	var out []File
	for _, name := range Names() {
		b, err := Read(name)
		if err != nil {
			return nil, err
		}
		f := File{Name: name}
		if err := yaml.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Options say what Rewrite changes. Zero values change nothing.
type Options struct {
	// For replaces every alert's `for:` duration.
	For time.Duration
	// Interval sets every group's evaluation interval.
	Interval time.Duration
	// Range replaces the duration of every range selector and subquery
	// range in every expression: rate(x[5m]) becomes rate(x[Range]),
	// max_over_time(x[1d]) becomes max_over_time(x[Range]). It must
	// still cover at least two scrapes for rate() to return anything.
	Range time.Duration
	// Thresholds sets threshold recording rules (those whose expr is
	// vector(NUMBER), e.g. rdma:alert_threshold:probe_stale_seconds) to
	// new values, by record name. A name that is not such a rule is an
	// error, so a renamed threshold breaks the test that sets it.
	Thresholds map[string]float64
}

// Rewrite writes every shipped rule file, rewritten by opts, into dir and
// returns their paths, for Prometheus' rule_files or promtool.
func Rewrite(dir string, opts Options) ([]string, error) {
	seen := map[string]bool{}
	var paths []string
	for _, name := range Names() {
		b, err := Read(name)
		if err != nil {
			return nil, err
		}
		out, err := rewrite(b, opts, seen)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	for name := range opts.Thresholds {
		if !seen[name] {
			return nil, fmt.Errorf("no threshold rule %q (want a record whose expr is vector(NUMBER))", name)
		}
	}
	return paths, nil
}

// RewriteYAML rewrites one rule file's contents by opts. Unlike Rewrite,
// it does not complain about Thresholds names the file does not define.
func RewriteYAML(data []byte, opts Options) ([]byte, error) {
	return rewrite(data, opts, map[string]bool{})
}

// thresholdExpr is the form of a threshold rule: a bare constant.
var thresholdExpr = regexp.MustCompile(`^\s*vector\(\s*[-+0-9.eE]+\s*\)\s*$`)

// rewrite works on the YAML node tree rather than on structs so that the
// comments, the key order and the block scalars of the shipped file
// survive: a failing e2e test can then be read against the original.
func rewrite(data []byte, opts Options, thresholdsSeen map[string]bool) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, errors.New("not a YAML document")
	}
	groups := mapValue(doc.Content[0], "groups")
	if groups == nil || groups.Kind != yaml.SequenceNode {
		return nil, errors.New("no groups list")
	}
	for _, g := range groups.Content {
		if opts.Interval > 0 {
			setMapValue(g, "interval", formatDuration(opts.Interval))
		}
		rules := mapValue(g, "rules")
		if rules == nil {
			continue
		}
		for _, r := range rules.Content {
			if err := rewriteRule(r, opts, thresholdsSeen); err != nil {
				return nil, err
			}
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func rewriteRule(r *yaml.Node, opts Options, thresholdsSeen map[string]bool) error {
	expr := mapValue(r, "expr")
	if expr == nil {
		return errors.New("rule without expr")
	}
	if rec := mapValue(r, "record"); rec != nil {
		if v, ok := opts.Thresholds[rec.Value]; ok {
			if !thresholdExpr.MatchString(expr.Value) {
				return fmt.Errorf("rule %s is not a threshold: expr %q", rec.Value, expr.Value)
			}
			expr.Value = "vector(" + strconv.FormatFloat(v, 'g', -1, 64) + ")"
			expr.Style = 0
			thresholdsSeen[rec.Value] = true
		}
	}
	if opts.Range > 0 {
		expr.Value = ReplaceRanges(expr.Value, opts.Range)
	}
	if opts.For > 0 && mapValue(r, "alert") != nil {
		setMapValue(r, "for", formatDuration(opts.For))
	}
	return nil
}

// mapValue returns the value node of key in mapping node m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setMapValue sets key to a plain scalar, adding the key if it is absent.
func setMapValue(m *yaml.Node, key, value string) {
	if v := mapValue(m, key); v != nil {
		v.Kind, v.Tag, v.Value, v.Style = yaml.ScalarNode, "!!str", value, 0
		return
	}
	m.Content = append(m.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
}

// formatDuration writes d as Prometheus durations are written ("90s" is
// "1m30s"); sub-millisecond parts are dropped, as Prometheus would.
func formatDuration(d time.Duration) string {
	return model.Duration(d.Truncate(time.Millisecond)).String()
}

// durationRE is a PromQL duration: one or more number-unit pairs.
var durationRE = regexp.MustCompile(`^[0-9]+(ms|[smhdwy])([0-9]+(ms|[smhdwy]))*$`)

// ReplaceRanges returns expr with the duration of every range selector
// ([5m]) and the range of every subquery ([1h:1m], whose resolution is
// kept) replaced by d. Quoted strings are left alone, so a label regex
// such as name=~"[0-9]+s" is not mistaken for a range.
func ReplaceRanges(expr string, d time.Duration) string {
	repl := formatDuration(d)
	var b strings.Builder
	for i := 0; i < len(expr); {
		switch c := expr[i]; c {
		case '"', '\'', '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j < len(expr) {
				j++
			}
			b.WriteString(expr[i:j])
			i = j
		case '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				b.WriteString(expr[i:])
				return b.String()
			}
			inner := expr[i+1 : i+end]
			rng, rest, sub := strings.Cut(inner, ":")
			if durationRE.MatchString(strings.TrimSpace(rng)) {
				b.WriteString("[" + repl)
				if sub {
					b.WriteString(":" + rest)
				}
				b.WriteString("]")
			} else {
				b.WriteString(expr[i : i+end+1])
			}
			i += end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}
