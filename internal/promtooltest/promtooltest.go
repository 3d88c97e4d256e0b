// Package promtooltest finds Prometheus's promtool for tests and runs its
// metrics lint. Tests that need promtool skip without it on a developer's
// machine; CI sets RDMARUN_REQUIRE_PROMTOOL, so that a lost package fails
// the build instead of skipping the checks silently.
package promtooltest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// RequireEnv, when set, makes a missing promtool a failure.
const RequireEnv = "RDMARUN_REQUIRE_PROMTOOL"

// Path returns the promtool to use: $PROMTOOL, else the one on $PATH.
// Without one it skips t, or fails it when RequireEnv is set.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("promtool not found and %s is set: %v", RequireEnv, err)
		}
		t.Skipf("promtool not found (%v); set %s=1 to make this a failure", err, RequireEnv)
	}
	return p
}

// CheckMetrics runs `promtool check metrics` on an exposition and returns
// what it printed: nothing, with a nil error, when it has no complaint.
func CheckMetrics(t testing.TB, exposition []byte) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Path(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
