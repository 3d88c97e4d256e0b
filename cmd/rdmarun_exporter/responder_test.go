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
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/config"
)

func TestPlanResponder(t *testing.T) {
	network := config.Responder{Enabled: true, Listen: ":18520"}
	allowed := network
	allowed.AllowUnauthenticated = true
	mtls := network
	mtls.TLS = config.TLS{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}
	loopback := config.Responder{Enabled: true, Listen: "127.0.0.1:18520"}
	missing := errors.New("token file: open /etc/rdmarun/token: no such file or directory")
	for _, tc := range []struct {
		name     string
		cfg      config.Responder
		token    string
		tokenErr error
		want     responderPlan
		offHas   []string
	}{
		{name: "disabled", cfg: config.Responder{Listen: ":18520"}},
		{name: "token", cfg: network, token: "s3cret", want: responderPlan{serve: true}},
		{name: "client certificates", cfg: mtls, want: responderPlan{serve: true}},
		{name: "loopback", cfg: loopback, want: responderPlan{serve: true}},
		{name: "allowed", cfg: allowed, want: responderPlan{serve: true, unauthenticated: true}},
		{name: "no token", cfg: network, offHas: []string{"reachable from the network", "rdmarun token --owner rdmarun /etc/rdmarun/token", "every node", "allow_unauthenticated: true"}},
		// An allowance does not cover a token file that is named but
		// unreadable: that is a mistake, not a choice.
		{name: "token file missing", cfg: allowed, tokenErr: missing, offHas: []string{missing.Error(), "rdmarun token --owner rdmarun /etc/rdmarun/token", "every node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planResponder(tc.cfg, tc.token, tc.tokenErr)
			off := got.off
			got.off = ""
			if got != tc.want {
				t.Errorf("plan %+v, want %+v", got, tc.want)
			}
			if (off != "") != (tc.offHas != nil) {
				t.Errorf("off reason %q, want one: %v", off, tc.offHas != nil)
			}
			for _, s := range tc.offHas {
				if !strings.Contains(off, s) {
					t.Errorf("off reason %q lacks %q", off, s)
				}
			}
		})
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
			log:       "level=WARN source=main.go:NN msg=\"responder off: other nodes cannot probe this one\" reason=\"token file: open TOKEN: no such file or directory; create the fleet's token once with `rdmarun token --owner rdmarun /etc/rdmarun/token`, copy that same file to every node, name it in responder.token_file, and restart\"",
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
			log:       "level=WARN source=main.go:NN msg=\"responder serves without authentication (responder.allow_unauthenticated)\" listen=RESPONDER risk=\"anyone who connects gets rkeys to this host's registered memory\"",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			token := filepath.Join(dir, "token")
			// A wildcard address with a free port: reachable from the
			// network, as the check requires.
			responderAddr := ":" + strings.Split(freeAddr(t), ":")[1]
			r := strings.NewReplacer("TOKEN", token, "RESPONDER", responderAddr)
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
				if strings.Contains(l, "msg=\"responder") && strings.Contains(l, "level=WARN") {
					lines = append(lines, sourceLine.ReplaceAllString(l[strings.Index(l, "level="):], "main.go:NN"))
				}
			}
			want := r.Replace(tc.log)
			if len(lines) != 1 || lines[0] != want {
				t.Errorf("responder warnings:\n%s\nwant exactly\n%s\nlog:\n%s", strings.Join(lines, "\n"), want, stderr.String())
			}
		})
	}
}

var sourceLine = regexp.MustCompile(`main\.go:\d+`)
