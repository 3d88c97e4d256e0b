package runner

import (
	"path/filepath"
	"testing"
)

// TestShippedScenarios loads every file in scenarios/: each must be valid
// and expand to at least one run, and a fleet's rounds must hold its pairs.
func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("found %d scenarios, want the 8 shipped ones", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := Load(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Runs()) == 0 {
				t.Fatal("no runs")
			}
			if sc.Fleet != nil {
				checkRounds(t, sc.Fleet)
			}
		})
	}
}
