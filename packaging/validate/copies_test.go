package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The chart cannot read files outside its directory, so it carries copies
// of the rules, the dashboards and the licence; `make helm-refresh` makes
// them again.
var copies = []struct{ source, copy, pattern string }{
	{"prometheus/rules", "packaging/helm/rdmarun/files/rules", "*.yml"},
	{"dashboards", "packaging/helm/rdmarun/files/dashboards", "*.json"},
	{".", "packaging/helm/rdmarun", "LICENSE"},
}

// TestChartCopiesEqualSources: the same file names, byte for byte.
func TestChartCopiesEqualSources(t *testing.T) {
	root := repoRoot(t)
	for _, c := range copies {
		src := globBase(t, filepath.Join(root, c.source), c.pattern)
		dst := globBase(t, filepath.Join(root, c.copy), c.pattern)
		if len(src) == 0 {
			t.Fatalf("no %s in %s", c.pattern, c.source)
		}
		if !slices.Equal(src, dst) {
			t.Errorf("%s holds %v but %s holds %v; run make helm-refresh", c.source, src, c.copy, dst)
			continue
		}
		for _, name := range src {
			a := readFile(t, filepath.Join(root, c.source, name))
			b := readFile(t, filepath.Join(root, c.copy, name))
			if !bytes.Equal(a, b) {
				t.Errorf("%s/%s differs from %s/%s; run make helm-refresh", c.copy, name, c.source, name)
			}
		}
	}
}

// globBase lists the base names of the files in dir matching pattern.
func globBase(t *testing.T, dir, pattern string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	slices.Sort(names)
	return names
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
