package runner

import (
	"flag"
	"os"
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
