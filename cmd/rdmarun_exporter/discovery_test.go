package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// discoveryWaitMetrics polls /metrics until ok accepts the body.
func discoveryWaitMetrics(t *testing.T, url, what string, ok func(body string) bool) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var body string
	for {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); resp.StatusCode == http.StatusOK && ok(body) {
				return body
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within 10 s; last /metrics:\n%s", what, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var fileErrors = regexp.MustCompile(`(?m)^rdmarun_exporter_discovery_errors_total\{source="file"\} [1-9]`)

// TestDiscoveryFollowsFile runs the daemon on a target file and edits it
// the way editors do (a new file renamed over the old one): the old
// target's series must go and the new one's come, without a reload. A
// broken edit keeps the last good target; a reload to another file swaps
// the targets before it returns.
func TestDiscoveryFollowsFile(t *testing.T) {
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.yml")
	writeTargets := func(content string) {
		t.Helper()
		tmp := targets + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, targets); err != nil {
			t.Fatal(err)
		}
	}
	writeTargets("- {name: file-old, address: 127.0.0.1:1, module: default}\n")
	cfgFile := filepath.Join(dir, "rdmarun_exporter.yml")
	// The file is named relative to the config, as a deployment would.
	cfg := "modules:\n  default: {interval: 1s, timeout: 500ms}\ntargets:\n  files: [targets.yml]\nresponder: {enabled: false}\n"
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemonConfig(t, cfgFile)
	addr := d.addr
	url := "http://" + addr + "/metrics"
	d.waitReady(t, http.DefaultClient, url)

	discoveryWaitMetrics(t, url, "the file's target", func(b string) bool {
		return strings.Contains(b, `rdma_probe_success{device=`) && strings.Contains(b, `target="file-old"`) &&
			strings.Contains(b, `rdmarun_exporter_discovery_targets{source="file"} 1`)
	})

	writeTargets("- {name: file-new, address: 127.0.0.1:1, module: default}\n")
	discoveryWaitMetrics(t, url, "the edited file's target replacing the old one", func(b string) bool {
		return strings.Contains(b, `target="file-new"`) && !strings.Contains(b, `target="file-old"`)
	})

	// A broken edit keeps the last good targets and shows as an error.
	writeTargets("- {name: file-bad, address: 127.0.0.1:1, module: nope}\n")
	body := discoveryWaitMetrics(t, url, "the broken file counted", func(b string) bool {
		return fileErrors.MatchString(b)
	})
	if !strings.Contains(body, `target="file-new"`) || strings.Contains(body, `target="file-bad"`) {
		t.Errorf("after a broken edit: want the last good target kept\n%s", body)
	}

	// A reload follows the new config's files, and returns once their
	// targets are probed.
	other := filepath.Join(dir, "other.yml")
	if err := os.WriteFile(other, []byte("- {name: file-other, address: 127.0.0.1:1, module: default}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, []byte(strings.Replace(cfg, "targets.yml", "other.yml", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reload: %d", resp.StatusCode)
	}
	if _, body := get(t, url); !strings.Contains(body, `target="file-other"`) || strings.Contains(body, `target="file-new"`) {
		t.Errorf("after a reload to another file: want its target alone\n%s", body)
	}

	d.stop(t)
}
