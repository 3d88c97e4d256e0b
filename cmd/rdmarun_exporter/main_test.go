package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestConfigCheck(t *testing.T) {
	if code := run([]string{"--config.file=../../exporter/config/testdata/good.yml", "--config.check"}); code != 0 {
		t.Errorf("good config: exit %d", code)
	}
	if code := run([]string{"--config.file=../../exporter/config/testdata/invalid-read-uc.yml", "--config.check"}); code != 3 {
		t.Errorf("invalid config: exit %d, want 3", code)
	}
	for _, bad := range []string{
		"modules: {m: {count: 1000000}}\n",
		"modules: {m: {tls: {ca_file: no-such-ca.pem}}}\n",
		"responder: {token_file: no-such-token}\n",
		"responder: {tls: {cert_file: no-such.pem, key_file: no-such.key}}\n",
	} {
		file := writeFile(t, t.TempDir(), "rdmarun_exporter.yml", []byte(bad))
		if code := run([]string{"--config.file=" + file, "--config.check"}); code != 3 {
			t.Errorf("--config.check of %q: exit %d, want 3", bad, code)
		}
	}
	if code := run([]string{"--no-such-flag"}); code != 3 {
		t.Errorf("bad flag: exit %d, want 3", code)
	}
	if code := run([]string{"--config.file=../../exporter/config/testdata/good.yml", "--config.check", "--runtime.gomaxprocs=0"}); code != 3 {
		t.Errorf("--runtime.gomaxprocs=0: exit %d, want 3", code)
	}
	if code := run([]string{"--config.file=../../exporter/config/testdata/good.yml", "--config.check", "--mesh.source=node a"}); code != 3 {
		t.Errorf("--mesh.source with a space: exit %d, want 3", code)
	}
}

// TestConfigCheckMalformed: --config.check of a file with values of the
// wrong shape exits 3 and logs each problem as a record of its own, at
// file:line:col under its key path, with what was found and what to
// write. It runs the daemon as its own process (TestWebHelperProcess),
// since the log is what it checks.
func TestConfigCheckMalformed(t *testing.T) {
	file := writeFile(t, t.TempDir(), "rdmarun_exporter.yml", []byte("modules:\n  default:\n    interval: 15\nmesh: {labels: [rack]}\n"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestWebHelperProcess$", "--", "--config.check", "--config.file", file)
	cmd.Env = append(os.Environ(), "RDMARUN_EXPORTER_HELPER_PROCESS=1")
	b, err := cmd.CombinedOutput()
	out := string(b)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit: %v, want status 3\n%s", err, out)
	}
	for _, want := range []string{
		`msg="invalid configuration" file=` + file + ` err="` + file + `:3:15: modules.default.interval: want a duration such as 5s, not \"15\"; give it a unit, such as 15s"` + "\n",
		`msg="invalid configuration" file=` + file + ` err="` + file + `:4:16: mesh.labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list"` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks\n%s\nlog:\n%s", want, out)
		}
	}
	if n := strings.Count(out, `msg="invalid configuration"`); n != 2 {
		t.Errorf("%d records of the configuration's problems, want 2, one each:\n%s", n, out)
	}
	if strings.Contains(out, "unmarshal") {
		t.Errorf("the decoder's own words reached the log:\n%s", out)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServe runs the daemon against a target where nothing listens (the
// verbs side is tested in the testbed; here only the HTTP side, metrics
// creation, /probe and reload are checked), then stops it with SIGTERM.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "rdmarun_exporter.yml")
	good := "modules:\n  default: {interval: 1s, timeout: 500ms}\ntargets:\n  static:\n    - {name: dead, address: 127.0.0.1:1, module: default}\nresponder: {enabled: false}\n"
	if err := os.WriteFile(cfgFile, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	// The daemon runs in this process and sets its GOMAXPROCS; an empty
	// GOMAXPROCS in the environment leaves the flag's default.
	t.Setenv("GOMAXPROCS", "")
	t.Cleanup(func(n int) func() { return func() { runtime.GOMAXPROCS(n) } }(runtime.GOMAXPROCS(0)))
	d := startDaemonConfig(t, cfgFile)
	base := "http://" + d.addr
	d.waitReady(t, http.DefaultClient, base+"/metrics")
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d while serving, want the flag's default 1", n)
	}
	code, body := get(t, base+"/metrics")
	for _, want := range []string{
		"rdmarun_exporter_build_info{",
		"rdmarun_exporter_config_last_reload_successful 1",
		`rdma_probe_success{device=`,
		`target="dead"`,
		`rdma_probe_completion_errors_total{`,
		`status="RETRY_EXC_ERR"`,
		"rdmarun_port_collector_errors",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
	if code, _ := get(t, base+"/probe"); code != http.StatusBadRequest {
		t.Errorf("/probe without target: %d", code)
	}
	if code, body := get(t, base+"/probe?target=127.0.0.1:1&module=nope"); code != http.StatusBadRequest || !strings.Contains(body, `unknown module "nope"`) {
		t.Errorf("/probe with an unknown module: %d %s", code, body)
	}
	code, body = get(t, base+"/probe?target=127.0.0.1:1&module=default")
	if code != 200 || !strings.Contains(body, `rdma_probe_success{device=`) || !strings.Contains(body, "} 0") {
		t.Errorf("/probe of a dead target: %d\n%s", code, body)
	}
	code, body = get(t, base+"/probe?target=127.0.0.1:1&module=default&debug=true")
	for _, want := range []string{"Logs for the probe:\n", "level=DEBUG msg=probe target=127.0.0.1:1 module=default", "msg=\"probe failed\"",
		"Metrics that would have been returned:\n", "rdma_probe_success{", `Module "default":`, "  op: write_imm\n", "  sizes: [2B]\n", "  timeout: 500ms\n"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/probe with debug=true (%d) lacks %q:\n%s", code, want, body)
		}
	}
	if code, _ := get(t, base+"/"); code != 200 {
		t.Errorf("landing page: %d", code)
	}
	if code, body := get(t, base+"/-/healthy"); code != 200 || body != "Healthy\n" {
		t.Errorf("/-/healthy: %d %q", code, body)
	}

	// A bad file on reload keeps the old configuration.
	if err := os.WriteFile(cfgFile, []byte("modules: {default: {op: teleport}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("reload of a bad file: %d", resp.StatusCode)
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, "rdmarun_exporter_config_last_reload_successful 0") || !strings.Contains(body, `target="dead"`) {
		t.Error("after a failed reload: want the failure reported and the old targets kept")
	}
	if err := os.WriteFile(cfgFile, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, body := get(t, base+"/metrics"); strings.Contains(body, "rdmarun_exporter_config_last_reload_successful 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload the fixed file")
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.stop(t)
}
