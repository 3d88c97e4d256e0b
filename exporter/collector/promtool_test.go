package collector

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// promtool runs `promtool check metrics` on exposition and returns what
// it printed; it prints nothing and exits 0 only when it has no complaint.
// CI sets RDMARUN_REQUIRE_PROMTOOL so that a lost package fails the build
// instead of skipping the lint silently.
func promtool(t *testing.T, exposition []byte) (string, error) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("RDMARUN_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("RDMARUN_REQUIRE_PROMTOOL is set but promtool is not installed: %v", err)
		}
		t.Skipf("promtool is not installed (%v); set RDMARUN_REQUIRE_PROMTOOL to make this a failure", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestPromtoolPortCollector lints the port collector's live exposition
// over each fixture tree, the mlx5 and rxe devices of "sysfs" and the
// malformed files of "broken", as Prometheus's own tool judges it.
func TestPromtoolPortCollector(t *testing.T) {
	for _, tree := range []string{"sysfs", "broken"} {
		t.Run(tree, func(t *testing.T) {
			text := exposition(t, NewPortCollector(filepath.Join("testdata", tree), nil))
			// An exposition without port series would pass vacuously.
			if !bytes.Contains(text, []byte("rdma_port_info{")) {
				t.Fatalf("no rdma_port_info series over %s:\n%s", tree, text)
			}
			if out, err := promtool(t, text); err != nil || out != "" {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}

// TestPromtoolFindsProblems keeps TestPromtoolPortCollector honest: were
// promtool to stop reading stdin or to exit 0 on lint problems, a clean
// result would mean nothing.
func TestPromtoolFindsProblems(t *testing.T) {
	bad := []byte("# HELP rdma_port_drops Dropped packets.\n# TYPE rdma_port_drops counter\nrdma_port_drops 1\n")
	out, err := promtool(t, bad)
	if err == nil || !strings.Contains(out, "_total") {
		t.Errorf("promtool on a counter without _total: %v %q, want a complaint and a non-zero exit", err, out)
	}
}
