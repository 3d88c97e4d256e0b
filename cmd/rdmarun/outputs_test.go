package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmarun/rdmarun/runner/report"
)

// TestOutputsWrite: "-" writes to stdout, a path to that file; several
// reports get the scenario's name before the extension.
func TestOutputsWrite(t *testing.T) {
	dir := t.TempDir()
	reps := []*report.Report{{Schema: report.Schema, Scenario: "a"}, {Schema: report.Schema, Scenario: "b"}}
	var stdout bytes.Buffer
	o := &outputs{json: "-", junit: filepath.Join(dir, "out.xml")}
	if err := o.write(&stdout, reps[:1]); err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(stdout.Bytes(), &back); err != nil || back.Scenario != "a" {
		t.Errorf("stdout %q: %v", stdout.String(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.xml")); err != nil {
		t.Error(err)
	}
	o = &outputs{json: filepath.Join(dir, "out.json")}
	if err := o.write(&stdout, reps); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"out-a.json", "out-b.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}
