package config

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustLabels(t testing.TB, m map[string]string) Labels {
	t.Helper()
	l, err := NewLabels(m)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMeshDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mesh
	}{
		// Without the section the mesh is off and every target is probed.
		{"", Mesh{}},
		{"modules: {}\n", Mesh{}},
		{"mesh:\n", Mesh{}},
		{"mesh: {}\n", Mesh{Rotate: time.Hour}},
		{"mesh: {max_targets: 32}\n", Mesh{MaxTargets: 32, Rotate: time.Hour}},
		{"mesh: {max_targets: 32, rotate: 1m}\n", Mesh{MaxTargets: 32, Rotate: time.Minute}},
		{"mesh: {max_probes_per_second: 0}\n", Mesh{Rotate: time.Hour}},
		{"mesh: {max_probes_per_second: 12.5}\n", Mesh{Rotate: time.Hour, MaxProbesPerSecond: 12.5}},
	} {
		c, err := Parse([]byte(tc.in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if !reflect.DeepEqual(c.Mesh, tc.want) {
			t.Errorf("Parse(%q) mesh = %+v, want %+v", tc.in, c.Mesh, tc.want)
		}
		if c.Mesh.Enabled() != (tc.want.MaxTargets > 0) {
			t.Errorf("Parse(%q): Enabled() = %v", tc.in, c.Mesh.Enabled())
		}
	}
}

func TestLoadBadMeshConfigs(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"max-targets", "mesh.max_targets: -1 is negative; use 0 to probe every target, or the number of peers each node samples"},
		{"rotate", "mesh.rotate: 30s is shorter than 1m0s; every rotation starts and stops probe series, so rotate at most once a minute"},
		{"rotate-zero", "mesh.rotate: 0s is shorter than 1m0s; every rotation starts and stops probe series, so rotate at most once a minute"},
		{"budget-negative", "mesh.max_probes_per_second: -2 must be a finite number >= 0; 0 sets no node-wide cap"},
		{"budget-nan", "mesh.max_probes_per_second: NaN must be a finite number >= 0; 0 sets no node-wide cap"},
		{"budget-inf", "mesh.max_probes_per_second: +Inf must be a finite number >= 0; 0 sets no node-wide cap"},
		{"selector-empty", "mesh.always[0]: a selector needs same or match; say which peers to keep, or remove the selector"},
		{"same-unknown", `mesh.always[1].same: label "rack" is not in mesh.labels; add it there or remove it`},
		{"label-name", `mesh.labels: label name "1rack" is invalid; use letters, digits and _, not starting with a digit`},
		{"label-empty", `mesh.labels: label "rack" has an empty value; give it one or remove the label`},
		{"match-name", `mesh.always[0].match: label name "tor-id" is invalid; use letters, digits and _, not starting with a digit`},
		{"source-empty", "mesh.source: is empty; name this node or remove the key to take the host name"},
		{"source-space", `mesh.source: "node 7" holds white space; use the node's name as its targets list it`},
		{"target-label-name", `target "n1": labels: label name "rack.id" is invalid; use letters, digits and _, not starting with a digit`},
		{"target-label-empty", `target "n1": labels: label "rack" has an empty value; give it one or remove the label`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := "testdata/mesh-" + tc.file + ".yml"
			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want error", path, c.Mesh)
			}
			if want := "config " + path + ": " + tc.want; err.Error() != want {
				t.Errorf("Load(%s) error:\n got %q\nwant %q", path, err, want)
			}
		})
	}
}

// Every mesh-*.yml must have a row above, or a new file would pass
// unchecked.
func TestEveryMeshFileIsTested(t *testing.T) {
	src, err := os.ReadFile("mesh_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/mesh-*.yml")
	if len(files) == 0 {
		t.Fatal("no testdata/mesh-*.yml")
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "mesh-"), ".yml")
		if !strings.Contains(string(src), `{"`+name+`", `) {
			t.Errorf("%s has no row in TestLoadBadMeshConfigs", f)
		}
	}
}

func TestTargetFileLabels(t *testing.T) {
	ts, err := LoadTargetFile("testdata/targets-labels.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"rack": "r1", "tor": "t1"}, {"rack": "r1", "rail": "2"}, nil}
	if len(ts) != len(want) {
		t.Fatalf("%d targets, want %d", len(ts), len(want))
	}
	for i, tg := range ts {
		if got := tg.Labels.Map(); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("target %s labels %v, want %v", tg.Name, got, want[i])
		}
	}
	if got := ts[1].Labels.Get("rail"); got != "2" {
		t.Errorf(`Get("rail") = %q, want "2"`, got)
	}
	if got := ts[0].Labels.Get("rail"); got != "" {
		t.Errorf(`Get("rail") of a target without it = %q, want ""`, got)
	}
	if got, want := ts[0].Labels.String(), `{rack="r1", tor="t1"}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}

	_, err = LoadTargetFile("testdata/targets-invalid-label.yml")
	if want := `targets file testdata/targets-invalid-label.yml: target "a": labels: label name "9" is invalid; use letters, digits and _, not starting with a digit`; err == nil || err.Error() != want {
		t.Errorf("bad label name: %v\nwant %s", err, want)
	}
}

// TestLabelsComparable: discovery finds changed targets with ==, so equal
// label sets must compare equal however they were written, and different
// ones unequal.
func TestLabelsComparable(t *testing.T) {
	a, err := ParseTargets([]byte("- {name: a, address: 'h:1', module: m, labels: {tor: t1, rack: r1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseTargets([]byte("- name: a\n  address: h:1\n  module: m\n  labels:\n    rack: r1\n    tor: t1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a[0] != b[0] {
		t.Errorf("same labels in another order compare unequal: %v, %v", a[0].Labels, b[0].Labels)
	}
	b[0].Labels = mustLabels(t, map[string]string{"rack": "r1", "tor": "t2"})
	if a[0] == b[0] {
		t.Error("different labels compare equal")
	}
	// A value holding '=' or a name's prefix must not confuse Get.
	l := mustLabels(t, map[string]string{"r": "x=y", "ra": "2", "rack": "r=1"})
	for n, want := range map[string]string{"r": "x=y", "ra": "2", "rack": "r=1", "rac": ""} {
		if got := l.Get(n); got != want {
			t.Errorf("Get(%q) = %q, want %q", n, got, want)
		}
	}
	if _, err := NewLabels(map[string]string{"rack": "r\x001"}); err == nil {
		t.Error("a value with a NUL byte was accepted")
	}
}

func TestDefaultSource(t *testing.T) {
	s := DefaultSource()
	if s == "" || strings.Contains(s, ".") {
		t.Errorf("DefaultSource() = %q, want a non-empty name without dots", s)
	}
	if h, err := os.Hostname(); err == nil && h != "" && !strings.HasPrefix(h, s) {
		t.Errorf("DefaultSource() = %q is not the start of the host name %q", s, h)
	}
}

// FuzzMeshConfig: a mesh section that parses is one the selection can use:
// a count that is not negative, a rotation of a minute or more, a finite
// budget, and selectors that each select by a label this node has.
func FuzzMeshConfig(f *testing.F) {
	files, _ := filepath.Glob("testdata/mesh-*.yml")
	for _, p := range append(files, "testdata/good.yml") {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("mesh: {max_targets: 8, labels: {rack: a}, always: [{same: [rack]}, {match: {rail: '1'}}]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		m := c.Mesh
		if m.MaxTargets < 0 {
			t.Errorf("max_targets %d parsed", m.MaxTargets)
		}
		if m.Rotate != 0 && m.Rotate < time.Minute {
			t.Errorf("rotate %v parsed", m.Rotate)
		}
		if m.Enabled() && m.Rotate == 0 {
			t.Error("mesh enabled with no rotation period")
		}
		if p := m.MaxProbesPerSecond; math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
			t.Errorf("max_probes_per_second %v parsed", p)
		}
		if strings.ContainsAny(m.Source, " \t\n") {
			t.Errorf("source %q parsed", m.Source)
		}
		if checkLabels(m.Labels) != nil {
			t.Errorf("labels %v parsed", m.Labels)
		}
		for i, s := range m.Always {
			if len(s.Same) == 0 && len(s.Match) == 0 {
				t.Errorf("always[%d] selects nothing", i)
			}
			for _, n := range s.Same {
				if m.Labels[n] == "" {
					t.Errorf("always[%d].same %q is not a label of this node", i, n)
				}
			}
		}
		for _, tg := range c.Targets.Static {
			if l, err := NewLabels(tg.Labels.Map()); err != nil || l != tg.Labels {
				t.Errorf("target %q labels %v parsed but do not round-trip: %v", tg.Name, tg.Labels, err)
			}
			if !slices.IsSortedFunc(labelNames(tg.Labels), strings.Compare) {
				t.Errorf("target %q labels not sorted: %v", tg.Name, tg.Labels)
			}
		}
	})
}

func labelNames(l Labels) []string {
	var out []string
	for n := range l.All() {
		out = append(out, n)
	}
	return out
}
