// Package chromium opens HTML pages in a real headless Chromium for the
// reports' tests (make chromium-test; .ci/run installs Debian's
// chromium): it fails a test on a page error, and saves screenshots.
package chromium

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

// Run runs Chromium headless with args, failing t if it does not finish
// within a minute.
func Run(t testing.TB, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, "chromium", append(base, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, e.String())
	}
	return o.String(), e.String()
}

// DOM has Chromium parse the page and returns the DOM it built, failing
// t on any script error in its log.
func DOM(t testing.TB, page string) string {
	t.Helper()
	dom, logs := Run(t, "--dump-dom", "file://"+page)
	for _, bad := range []string{"Uncaught", "SyntaxError", "TypeError", "ReferenceError"} {
		if strings.Contains(logs, bad) {
			t.Errorf("page error (%s) in Chromium's log:\n%s", bad, logs)
		}
	}
	return dom
}

// Screenshot has Chromium draw page at size ("1280,1800") into name in
// the temporary directory (or the file env names) and fails unless the
// image holds at least minBytes: a blank page compresses to far less.
func Screenshot(t testing.TB, page, name, env, size string, minBytes int64) {
	t.Helper()
	shot := filepath.Join(os.TempDir(), name)
	if out := os.Getenv(env); out != "" {
		shot = out
	}
	Run(t, "--screenshot="+shot, "--window-size="+size, "file://"+page)
	if st, err := os.Stat(shot); err != nil || st.Size() < minBytes {
		t.Fatalf("screenshot %s: %v (size %v)", shot, err, st)
	}
	t.Logf("screenshot saved to %s", shot)
}
