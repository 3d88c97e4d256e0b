package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorMetrics: the daemon runs the doctor on its own and exports
// its checks; a reload that disables it removes them, one that enables it
// brings them back without waiting for the interval.
func TestDoctorMetrics(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "rdmarun_exporter.yml")
	write := func(doctor string) {
		t.Helper()
		cfg := "modules:\n  default: {interval: 1s, timeout: 500ms}\nresponder: {enabled: false}\ndoctor: " + doctor + "\n"
		if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("{enabled: true, interval: 1h}")
	dmn := startDaemonConfig(t, cfgFile)
	metrics := "http://" + dmn.addr + "/metrics"
	dmn.waitReady(t, http.DefaultClient, metrics)
	// The host's own checks are there on any host, RDMA or not.
	memlock := `rdmarun_doctor_check_severity{check="limits.memlock",device="",port=""} `
	has := func(body string) bool {
		return strings.Contains(body, memlock) && strings.Contains(body, "rdmarun_doctor_last_run_timestamp_seconds ") &&
			strings.Contains(body, "rdmarun_doctor_last_run_duration_seconds ")
	}
	discoveryWaitMetrics(t, metrics, "the doctor's checks", has)

	post := func() {
		t.Helper()
		resp, err := http.Post("http://"+dmn.addr+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reload: %d", resp.StatusCode)
		}
	}
	write("{enabled: false}")
	post()
	discoveryWaitMetrics(t, metrics, "no doctor series once disabled", func(body string) bool {
		return strings.Contains(body, "rdmarun_exporter_config_last_reload_successful 1") && !strings.Contains(body, "rdmarun_doctor_")
	})
	// Enabled again with the hour's interval: it runs at once, since its
	// last report was dropped.
	write("{enabled: true, interval: 1h}")
	post()
	discoveryWaitMetrics(t, metrics, "the doctor's checks after it was enabled again", has)
	dmn.stop(t)
}
