package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/config"
)

// TestOffReason: a responder that cannot start says why, with the fix
// in the exporter's terms; an allowance does not cover a token file that
// is named but unreadable (a mistake, not a choice); --config.check
// fails on that one only.
func TestOffReason(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ctrl.TokenEnv, "")
	missing := filepath.Join(dir, "token")
	network := config.Responder{Enabled: true, Listen: ":18520", DevicePort: 1, Relay: true}
	allowed := network
	allowed.AllowUnauthenticated = true
	allowedMissing := allowed
	allowedMissing.TokenFile = missing
	for _, tc := range []struct {
		name   string
		cfg    config.Responder
		offHas []string // --config.check's warning; none when it serves
		errHas []string // --config.check's error
	}{
		{name: "disabled", cfg: config.Responder{Listen: ":18520"}},
		{name: "loopback", cfg: config.Responder{Enabled: true, Listen: "127.0.0.1:18520"}},
		{name: "allowed", cfg: allowed},
		{name: "no token", cfg: network, offHas: []string{"reachable from the network", "rdmarun token --owner rdmarun /etc/rdmarun/token", "every node",
			"systemctl reload rdmarun_exporter", "allow_unauthenticated: true"}},
		{name: "token file missing, allowed", cfg: allowedMissing, errHas: []string{"responder.token_file: token file: open " + missing,
			"rdmarun token --owner rdmarun /etc/rdmarun/token", "every node", "systemctl reload rdmarun_exporter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off, err := checkResponder(tc.cfg, "")
			if (off != "") != (tc.offHas != nil) || (err != nil) != (tc.errHas != nil) {
				t.Fatalf("off %q, error %v; want a reason %v, an error %v", off, err, tc.offHas != nil, tc.errHas != nil)
			}
			for _, s := range tc.offHas {
				if !strings.Contains(off, s) {
					t.Errorf("off reason %q lacks %q", off, s)
				}
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

// TestChangedKeys: a reload names, by their keys, the responder settings
// that changed and wait for a restart; a new token_file is read at once
// and is not among them.
func TestChangedKeys(t *testing.T) {
	was := config.Responder{Enabled: true, Listen: ":18520", TokenFile: "a", TLS: config.TLS{CertFile: "c"}, MaxQPs: 64}
	now := was
	now.TokenFile, now.Listen, now.MaxQPs, now.TLS.RelayCAFile = "b", ":1", 8, "ca"
	got := changedKeys(reflect.ValueOf(was), reflect.ValueOf(now), "responder.")
	if want := []string{"responder.listen", "responder.tls.relay_ca_file", "responder.max_qps"}; !slices.Equal(got, want) {
		t.Errorf("changed %q, want %q", got, want)
	}
	if got := changedKeys(reflect.ValueOf(was), reflect.ValueOf(was), "responder."); len(got) != 0 {
		t.Errorf("no change: %q", got)
	}
}

// TestNoTokenStillServesPorts: without its token file the exporter runs,
// exports port metrics and probe series, and shows its responder as off;
// --config.check fails on the same file.
func TestNoTokenStillServesPorts(t *testing.T) {
	dir := t.TempDir()
	cfg := "modules:\n  default: {interval: 1s, timeout: 500ms}\n" +
		"targets:\n  static:\n    - {name: dead, address: 127.0.0.1:1, module: default}\n" +
		"responder:\n  listen: \":18520\"\n  token_file: " + filepath.Join(dir, "token") + "\n"
	cfgFile := writeFile(t, dir, "rdmarun_exporter.yml", []byte(cfg))
	if code := run([]string{"--config.file=" + cfgFile, "--config.check"}); code != 3 {
		t.Errorf("--config.check with a missing token file: exit %d, want 3", code)
	}
	d := startDaemonConfig(t, cfgFile, "--sysfs.root=../../exporter/collector/testdata/sysfs")
	base := "http://" + d.addr
	d.waitReady(t, http.DefaultClient, base+"/metrics")
	code, body := get(t, base+"/metrics")
	for _, want := range []string{
		"rdmarun_exporter_responder_enabled 0",
		"rdmarun_exporter_responder_unauthenticated 0",
		`rdmarun_port_up{`,
		`rdmarun_port_counters_total{`,
		`rdma_probe_success{device=`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
	d.stop(t)
}

// TestResponderStartLog runs the daemon as a process of its own, since its
// log is what is checked: without a token one line says how to make it;
// allowed to serve without one, it warns and its metric says so.
func TestResponderStartLog(t *testing.T) {
	for _, tc := range []struct {
		name      string
		responder string
		flags     []string
		metrics   []string
		log       string
	}{
		{
			name:      "no token file",
			responder: "  listen: \":18520\"\n  token_file: TOKEN\n",
			metrics:   []string{"rdmarun_exporter_responder_enabled 0", "rdmarun_exporter_responder_unauthenticated 0"},
			log:       "level=WARN source=responder.go:NN msg=\"responder off: other nodes cannot probe this one\" reason=\"responder.token_file: token file: open TOKEN: no such file or directory; " + tokenHowTo + "\"",
		},
		{
			// NewServer opens no device until a test comes, so a made-up
			// name lets the responder listen on a machine without RDMA.
			// The CM listener is off: whether it starts depends on this
			// machine's rdma_cm, not on the token.
			name:      "allowed without a token",
			responder: "  listen: \"RESPONDER\"\n  allow_unauthenticated: true\n  cm_port: -1\n",
			flags:     []string{"--device=fake0"},
			metrics:   []string{"rdmarun_exporter_responder_enabled 1", "rdmarun_exporter_responder_unauthenticated 1"},
			log:       "level=WARN source=responder.go:NN msg=\"serving without authentication (responder.allow_unauthenticated)\" listen=[::]:PORT risk=\"anyone who connects gets rkeys to this host's registered memory\"",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			token := filepath.Join(dir, "token")
			// A wildcard address with a free port: reachable from the
			// network, as the check requires.
			port := strings.Split(freeAddr(t), ":")[1]
			r := strings.NewReplacer("TOKEN", token, "RESPONDER", ":"+port, "PORT", port)
			cfgFile := writeFile(t, dir, "rdmarun_exporter.yml", []byte("responder:\n"+r.Replace(tc.responder)))
			addr := freeAddr(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			args := append([]string{"-test.run=^TestWebHelperProcess$", "--", "--config.file=" + cfgFile, "--web.listen-address=" + addr}, tc.flags...)
			cmd := exec.CommandContext(ctx, os.Args[0], args...)
			cmd.Env = append(os.Environ(), "RDMARUN_EXPORTER_HELPER_PROCESS=1", ctrl.TokenEnv+"=")
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
			}()
			var body string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					body = string(b)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no /metrics within 10 s\n%s", stderr.String())
				}
			}
			for _, want := range tc.metrics {
				if !strings.Contains(body, want) {
					t.Errorf("/metrics lacks %q", want)
				}
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			var lines []string
			for _, l := range strings.Split(stderr.String(), "\n") {
				if strings.Contains(l, "responder") && strings.Contains(l, "level=WARN") {
					lines = append(lines, sourceLine.ReplaceAllString(l[strings.Index(l, "level="):], "$1:NN"))
				}
			}
			want := r.Replace(tc.log)
			if len(lines) != 1 || lines[0] != want {
				t.Errorf("responder warnings:\n%s\nwant exactly\n%s\nlog:\n%s", strings.Join(lines, "\n"), want, stderr.String())
			}
		})
	}
}

var sourceLine = regexp.MustCompile(`(\w+\.go):\d+`)

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestResponderTokenReload runs the exporter as a process with its
// responder on loopback and a token file that does not exist yet: the
// responder is off (nothing listens) until the file exists and a SIGHUP
// reloads; then a client that proves the token is served and one with
// another is refused. A rotated token takes effect at the next reload
// (POST /-/reload), and a file that disappears keeps the token in force.
// No token is ever logged. The handshake happens before any verbs call,
// and the responder opens its device only for a test, so a made-up
// device serves here.
func TestResponderTokenReload(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	responderAddr := freeAddr(t)
	cfgFile := writeFile(t, dir, "rdmarun_exporter.yml", []byte("responder:\n  listen: "+responderAddr+"\n  token_file: token\n  cm_port: -1\n"))
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWebHelperProcess$", "--", "--config.file="+cfgFile,
		"--web.listen-address="+addr, "--device=fake0", "--log.level=debug")
	cmd.Env = append(os.Environ(), "RDMARUN_EXPORTER_HELPER_PROCESS=1", ctrl.TokenEnv+"=")
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	base := "http://" + addr
	metric := func() string {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	waitFor := func(what, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(metric(), want); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no %q in /metrics within 10 s\n%s", what, want, log.String())
			}
		}
	}
	reload := func() (int, string) {
		t.Helper()
		resp, err := http.Post(base+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	handshake := func(token string) error {
		t.Helper()
		hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
		defer hcancel()
		nc, err := ctrl.Dial(hctx, responderAddr, nil)
		if err != nil {
			return err
		}
		c, err := ctrl.Client(hctx, nc, token)
		if err == nil {
			c.Close()
		}
		return err
	}
	const first, second = "fleet-token-one-7c1e", "fleet-token-two-93ab"

	waitFor("at start", "rdmarun_exporter_responder_enabled 0")
	if err := handshake(first); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("before the token exists: %v, want the connection refused", err)
	}
	// A reload that still finds no token says so.
	if code, body := reload(); code != http.StatusInternalServerError || !strings.Contains(body, "responder.token_file: token file: open "+tokenFile) {
		t.Errorf("reload without the token: %d %q, want 500 naming responder.token_file", code, body)
	}

	writeFile(t, dir, "token", []byte(first+"\n"))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("after SIGHUP with the token", "rdmarun_exporter_responder_enabled 1")
	if err := handshake(first); err != nil {
		t.Errorf("the token: %v", err)
	}
	if err := handshake("not-the-fleet-token"); !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("another token: %v, want ctrl.ErrAuth", err)
	}

	writeFile(t, dir, "token", []byte(second+"\n"))
	if code, body := reload(); code != http.StatusOK {
		t.Errorf("reload of a rotated token: %d %q", code, body)
	}
	if err := handshake(second); err != nil {
		t.Errorf("the rotated token: %v", err)
	}
	if err := handshake(first); !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("the old token after the rotation: %v, want ctrl.ErrAuth", err)
	}

	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	if code, body := reload(); code != http.StatusInternalServerError || !strings.Contains(body, "keeping the token in force") {
		t.Errorf("reload with the token file gone: %d %q, want 500, the token kept", code, body)
	}
	if err := handshake(second); err != nil {
		t.Errorf("the token in force after its file went: %v", err)
	}
	if !strings.Contains(metric(), "rdmarun_exporter_responder_enabled 1") {
		t.Error("the responder went off when its token file went")
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	out := log.String()
	for _, want := range []string{`msg="responder off: other nodes cannot probe this one"`, `msg="responder serving" listen=` + responderAddr + " device=fake0",
		`msg="responder token reloaded: new connections must prove the new one"`, `msg="responder: keeping the token in force"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s\n%s", want, out)
		}
	}
	for _, secret := range []string{first, second} {
		if strings.Contains(out, secret) {
			t.Errorf("a token is in the log:\n%s", out)
		}
	}
}
