package collector

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/promtooltest"
)

// TestPromtoolPortCollector lints the port collector's live exposition
// over each fixture tree, the mlx5 and rxe devices of "sysfs" and the
// malformed files of "broken", as Prometheus's own tool judges it.
func TestPromtoolPortCollector(t *testing.T) {
	for _, tree := range []string{"sysfs", "broken"} {
		t.Run(tree, func(t *testing.T) {
			text := exposition(t, NewPortCollector(filepath.Join("testdata", tree), nil))
			// An exposition without port series would pass vacuously.
			if !bytes.Contains(text, []byte("rdmarun_port_info{")) {
				t.Fatalf("no rdmarun_port_info series over %s:\n%s", tree, text)
			}
			if out, err := promtooltest.CheckMetrics(t, text); err != nil || out != "" {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}

// TestPromtoolFindsProblems keeps TestPromtoolPortCollector honest: were
// promtool to stop reading stdin or to exit 0 on lint problems, a clean
// result would mean nothing.
func TestPromtoolFindsProblems(t *testing.T) {
	bad := []byte("# HELP rdmarun_port_drops Dropped packets.\n# TYPE rdmarun_port_drops counter\nrdmarun_port_drops 1\n")
	out, err := promtooltest.CheckMetrics(t, bad)
	if err == nil || !strings.Contains(out, "_total") {
		t.Errorf("promtool on a counter without _total: %v %q, want a complaint and a non-zero exit", err, out)
	}
}
