package runner

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
)

const (
	knobDocStart = "<!-- knobs: generated from runner/knobs.go; go test ./runner -run TestKnobDoc -update rewrites it -->\n"
	knobDocEnd   = "<!-- end of knobs -->\n"
)

// knobDoc renders the knob table as README.md shows it.
func knobDoc() string {
	var b strings.Builder
	b.WriteString("| key | bench flag | value | unit | default | what it sets |\n|---|---|---|---|---|---|\n")
	for _, k := range Knobs() {
		flags := []string{"`--" + k.Flag() + "`"}
		for _, a := range k.Aliases {
			flags = append(flags, "`--"+a+"`")
		}
		unit := k.Unit
		if unit == "" {
			unit = "-"
		}
		cells := []string{"`" + k.Name + "`", strings.Join(flags, ", "), k.Type, unit, k.Default, k.Help}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`) // a bare | would end the cell
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// TestKnobDoc keeps the knob table in README.md in step with knobs: it
// fails when they differ, and -update rewrites the section.
func TestKnobDoc(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start, end := strings.Index(doc, knobDocStart), strings.Index(doc, knobDocEnd)
	if start < 0 || end < start {
		t.Fatalf("README.md has no knob section between %q and %q", knobDocStart, knobDocEnd)
	}
	got := doc[start+len(knobDocStart) : end]
	want := knobDoc()
	if got == want {
		return
	}
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		doc = doc[:start+len(knobDocStart)] + want + doc[end:]
		if err := os.WriteFile("README.md", []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's knob table differs from knobs (go test ./runner -run TestKnobDoc -update rewrites it):\n--- README.md\n%s--- knobs\n%s", got, want)
}

// TestKnobNames: every flag spelling names one knob, and none collides
// with a case key, so a flag always means one setting.
func TestKnobNames(t *testing.T) {
	seen := map[string]string{}
	for _, k := range caseKeys[:len(caseKeys)-len(knobs)] {
		seen[strings.ReplaceAll(k, "_", "-")] = "case key " + k
	}
	for _, k := range Knobs() {
		for _, f := range append([]string{k.Flag()}, k.Aliases...) {
			if other, dup := seen[f]; dup {
				t.Errorf("--%s is both %s and knob %s", f, other, k.Name)
			}
			seen[f] = "knob " + k.Name
			if got, ok := LookupKnob(f); !ok || got.Name != k.Name {
				t.Errorf("LookupKnob(%q) = %v, %v; want %s", f, got.Name, ok, k.Name)
			}
		}
		if k.Type == "" || k.Default == "" || k.Help == "" {
			t.Errorf("knob %s lacks a type, default or help: %+v", k.Name, k)
		}
	}
}

// TestKnobDefaultsAreTheEngines: a knob's documented default, where it is
// one value, is what the engine runs when the knob is left out, so the
// table (and bench's help) cannot drift from rdma.TestSpec.Complete.
func TestKnobDefaultsAreTheEngines(t *testing.T) {
	base := []Setting{{Key: "op", Value: "send"}, {Key: "measure", Value: "latency"}}
	without, err := Single("defaults", base)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, k := range Knobs() {
		if k.Check(k.Default) != nil {
			continue // a default that depends on other settings, in words
		}
		with, err := Single("defaults", append(slices.Clone(base), Setting{Key: k.Name, Value: k.Default}))
		if err != nil {
			t.Errorf("%s: its default %q does not load: %v", k.Name, k.Default, err)
			continue
		}
		if got, want := with.Runs()[0].Spec.String(), without.Runs()[0].Spec.String(); got != want {
			t.Errorf("%s: %s given as its default %q runs\n%s\nleft out it runs\n%s", k.Name, k.Name, k.Default, got, want)
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d knobs have a single-value default; the check reads too little", checked)
	}
}
