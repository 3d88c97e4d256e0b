package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/rdmarun/rdmarun/internal/promtooltest"
	"github.com/rdmarun/rdmarun/internal/testcert"
)

// The daemons below probe a static target where nothing listens, so that
// /metrics carries probe series without any RDMA hardware.
const deadTargetConfig = "modules:\n  default: {interval: 1s, timeout: 500ms}\ntargets:\n  static:\n    - {name: dead, address: 127.0.0.1:1, module: default}\nresponder: {enabled: false}\n"

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// daemon is run() serving on a free port of its own, stopped by SIGTERM
// like TestServe does it.
type daemon struct {
	addr    string
	exited  chan int
	stopped bool
}

// startDaemon runs the exporter with the web configuration webConfig
// ("" for none).
func startDaemon(t *testing.T, webConfig string) *daemon {
	t.Helper()
	cfgFile := writeFile(t, t.TempDir(), "rdmarun_exporter.yml", []byte(deadTargetConfig))
	var args []string
	if webConfig != "" {
		args = append(args, "--web.config.file="+webConfig)
	}
	return startDaemonConfig(t, cfgFile, args...)
}

// startDaemonConfig runs the exporter on the config file cfgFile, with
// more flags; t's cleanup stops it unless the test did.
func startDaemonConfig(t *testing.T, cfgFile string, flags ...string) *daemon {
	t.Helper()
	args := append([]string{"--config.file=" + cfgFile, "--log.level=error"}, flags...)
	d := &daemon{addr: freeAddr(t), exited: make(chan int, 1)}
	args = append(args, "--web.listen-address="+d.addr)

	// SIGTERM is process-wide: should it arrive when run() is not (or no
	// longer) listening for it, this keeps it from killing the whole test
	// binary, and the test fails on its deadline instead.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGTERM)
	t.Cleanup(func() {
		d.stop(t)
		signal.Stop(guard)
	})
	go func() { d.exited <- run(args) }()
	return d
}

// waitReady polls url with c until the daemon answers at all; an
// authentication failure counts as an answer.
func (d *daemon) waitReady(t *testing.T, c *http.Client, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case code := <-d.exited:
			d.stopped = true
			t.Fatalf("the exporter exited with %d before serving %s: %v", code, url, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter did not serve %s within 10 s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.stopped {
		return
	}
	d.stopped = true
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-d.exited:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	case <-time.After(10 * time.Second):
		t.Error("the exporter did not stop within 10 s of SIGTERM")
	}
}

func newClient(t *testing.T, tlsCfg *tls.Config) *http.Client {
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// do sends req and returns the status and body; a transport error is
// returned, not fatal, since several checks expect one.
func do(c *http.Client, req *http.Request) (int, string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func newRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// isMetrics tells a real scrape from an error page.
func isMetrics(body string) bool {
	return strings.Contains(body, "rdmarun_exporter_build_info{") && strings.Contains(body, "rdma_probe_success{")
}

func TestWebBasicAuth(t *testing.T) {
	pass := rand.Text()
	// The lowest cost keeps the test fast; the daemon accepts any cost.
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := writeFile(t, t.TempDir(), "web.yml", []byte("basic_auth_users:\n  prometheus: '"+string(hash)+"'\n"))
	d := startDaemon(t, webCfg)
	c := newClient(t, nil)
	metrics := "http://" + d.addr + "/metrics"
	d.waitReady(t, c, metrics)

	for _, tc := range []struct {
		name, user, pass string
		auth             bool
		want             int
	}{
		{name: "no credentials", want: http.StatusUnauthorized},
		{name: "wrong password", user: "prometheus", pass: pass + "x", auth: true, want: http.StatusUnauthorized},
		{name: "unknown user", user: "grafana", pass: pass, auth: true, want: http.StatusUnauthorized},
		{name: "right password", user: "prometheus", pass: pass, auth: true, want: http.StatusOK},
	} {
		req := newRequest(t, http.MethodGet, metrics)
		if tc.auth {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		code, body, err := do(c, req)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, code, tc.want)
		}
		if got := isMetrics(body); got != (tc.want == http.StatusOK) {
			t.Errorf("%s: metrics in the body: %v\n%.300s", tc.name, got, body)
		}
	}

	// Reload changes what the daemon probes, so it must not be open to
	// whoever can reach the port either.
	if code, _, err := do(c, newRequest(t, http.MethodPost, "http://"+d.addr+"/-/reload")); err != nil || code != http.StatusUnauthorized {
		t.Errorf("POST /-/reload without credentials: %d %v, want 401", code, err)
	}
	d.stop(t)
}

// selfSigned makes a certificate for 127.0.0.1 that signs itself, so
// that it is its own trust anchor for whichever side checks it, and
// returns it and its key as PEM.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	certFile, keyFile := testcert.Write(t, "127.0.0.1")
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func certPool(t *testing.T, certPEM []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(certPEM) {
		t.Fatal("bad certificate PEM")
	}
	return p
}

func TestWebTLS(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	certFile := writeFile(t, dir, "server.crt", certPEM)
	keyFile := writeFile(t, dir, "server.key", keyPEM)
	webCfg := writeFile(t, dir, "web.yml", []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+"\n"))
	d := startDaemon(t, webCfg)
	trusting := newClient(t, &tls.Config{RootCAs: certPool(t, certPEM)})
	metrics := "https://" + d.addr + "/metrics"
	d.waitReady(t, trusting, metrics)

	resp, err := trusting.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.TLS == nil || !isMetrics(string(body)) {
		t.Errorf("https with the certificate trusted: %d, TLS %v, read err %v\n%.300s", resp.StatusCode, resp.TLS != nil, err, body)
	}

	// The daemon must not answer plain HTTP with metrics on the TLS port;
	// Go's server replies 400 rather than breaking the connection.
	code, plain, err := do(newClient(t, nil), newRequest(t, http.MethodGet, "http://"+d.addr+"/metrics"))
	if err == nil && (code == http.StatusOK || isMetrics(plain)) {
		t.Errorf("plain http on the TLS port: %d\n%.300s", code, plain)
	}

	// An empty pool rather than nil, so that the host's CAs play no part.
	distrusting := newClient(t, &tls.Config{RootCAs: x509.NewCertPool()})
	_, _, err = do(distrusting, newRequest(t, http.MethodGet, metrics))
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Errorf("https without trusting the certificate: got %v, want a certificate verification error", err)
	}
	d.stop(t)
}

func TestWebTLSClientAuth(t *testing.T) {
	dir := t.TempDir()
	serverCert, serverKey := selfSigned(t)
	clientCert, clientKey := selfSigned(t)
	strangerCert, strangerKey := selfSigned(t)
	webCfg := writeFile(t, dir, "web.yml", []byte("tls_server_config:\n"+
		"  cert_file: "+writeFile(t, dir, "server.crt", serverCert)+"\n"+
		"  key_file: "+writeFile(t, dir, "server.key", serverKey)+"\n"+
		"  client_auth_type: RequireAndVerifyClientCert\n"+
		"  client_ca_file: "+writeFile(t, dir, "client.crt", clientCert)+"\n"))
	d := startDaemon(t, webCfg)
	roots := certPool(t, serverCert)
	withCert := func(certPEM, keyPEM []byte) *http.Client {
		kp, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return newClient(t, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{kp}})
	}
	known := withCert(clientCert, clientKey)
	metrics := "https://" + d.addr + "/metrics"
	d.waitReady(t, known, metrics)

	if code, body, err := do(known, newRequest(t, http.MethodGet, metrics)); err != nil || code != http.StatusOK || !isMetrics(body) {
		t.Errorf("with the trusted client certificate: %d %v\n%.300s", code, err, body)
	}
	for name, c := range map[string]*http.Client{
		"no client certificate":    newClient(t, &tls.Config{RootCAs: roots}),
		"an untrusted certificate": withCert(strangerCert, strangerKey),
	} {
		// With TLS 1.3 the server rejects the client after the client's
		// side of the handshake is done, so the error may come with the
		// response rather than from the handshake; either way no metrics.
		if code, body, err := do(c, newRequest(t, http.MethodGet, metrics)); err == nil {
			t.Errorf("%s: %d, want the connection refused\n%.300s", name, code, body)
		}
	}
	d.stop(t)
}

// TestWebHelperProcess is not a test of its own: TestWebConfigInvalid runs
// the test binary again as the daemon, because a real exit code and a real
// log are what it checks, and in-process run() writes to the test's stderr.
func TestWebHelperProcess(t *testing.T) {
	if os.Getenv("RDMARUN_EXPORTER_HELPER_PROCESS") != "1" {
		t.Skip("only runs as the daemon of TestWebConfigInvalid")
	}
	os.Exit(run(flag.Args()))
}

// TestWebConfigInvalid checks that a web configuration the daemon cannot
// apply stops it at start, naming the file, rather than leaving it serving
// metrics without the authentication or TLS the file asked for.
func TestWebConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	cfgFile := writeFile(t, dir, "rdmarun_exporter.yml", []byte(deadTargetConfig))
	certPEM, _ := selfSigned(t)
	certFile := writeFile(t, dir, "server.crt", certPEM)
	for _, tc := range []struct{ name, content string }{
		{"unknown key", "basic_auth_user:\n  prometheus: secret\n"},
		{"plaintext password instead of a bcrypt hash", "basic_auth_users:\n  prometheus: secret\n"},
		{"missing key file", "tls_server_config:\n  cert_file: " + certFile + "\n  key_file: " + filepath.Join(dir, "absent.key") + "\n"},
		{"missing web config file", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			webCfg := filepath.Join(t.TempDir(), "web.yml")
			if tc.content != "" {
				writeFile(t, filepath.Dir(webCfg), "web.yml", []byte(tc.content))
			}
			addr := freeAddr(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWebHelperProcess$", "--",
				"--config.file="+cfgFile, "--web.config.file="+webCfg, "--web.listen-address="+addr)
			cmd.Env = append(os.Environ(), "RDMARUN_EXPORTER_HELPER_PROCESS=1")
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()

			// Scrape while the daemon lives: a single answer means it served.
			c := newClient(t, nil)
			var served []int
			var err error
		poll:
			for {
				select {
				case err = <-waited:
					break poll
				default:
				}
				if code, _, gerr := do(c, newRequest(t, http.MethodGet, "http://"+addr+"/metrics")); gerr == nil {
					served = append(served, code)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if ctx.Err() != nil {
				t.Fatalf("the daemon did not exit within 20 s\n%s", &stderr)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 3 {
				t.Errorf("exit: %v, want status 3", err)
			}
			if len(served) > 0 {
				t.Errorf("the daemon answered %v before it exited", served)
			}
			log := stderr.String()
			if !strings.Contains(log, "invalid web configuration") || !strings.Contains(log, "file="+webCfg) {
				t.Errorf("the log does not name the web configuration file %s", webCfg)
			}
			// Listening, or starting probes, would mean the file was found
			// wrong only after the daemon had begun to work.
			if strings.Contains(log, "Listening on") || strings.Contains(log, "starting rdmarun_exporter") {
				t.Error("the daemon started before giving up")
			}
			if t.Failed() {
				t.Logf("daemon log:\n%s", log)
			}
		})
	}
}

// promtoolCheck fails t on anything promtool says about exposition: it
// prints lint problems and exits non-zero, and says nothing when all is well.
func promtoolCheck(t *testing.T, exposition []byte) {
	t.Helper()
	out, err := promtooltest.CheckMetrics(t, exposition)
	if err != nil || out != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestPromtoolDaemonMetrics lints what Prometheus would scrape from a
// running daemon: probe series for the dead target, the reload, scheduler,
// port-collector, build, Go and process metrics.
func TestPromtoolDaemonMetrics(t *testing.T) {
	promtooltest.Path(t)
	d := startDaemon(t, "")
	c := newClient(t, nil)
	metrics := "http://" + d.addr + "/metrics"
	d.waitReady(t, c, metrics)

	// Probe series appear with the first scheduled probe; linting before
	// them would leave the exporter's own metrics out.
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, b, err := do(c, newRequest(t, http.MethodGet, metrics))
		if err == nil && code == http.StatusOK && isMetrics(b) && strings.Contains(b, "rdma_probes_total{") {
			body = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no probe series on /metrics within 10 s: %d %v\n%.300s", code, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.stop(t)
	// Each family checked here is one a scrape of a host without RDMA
	// always has; were one lost, its lint would be lost with it.
	for _, want := range []string{
		"rdma_probe_latency_seconds_bucket{", "rdma_probes_total{", "rdma_probe_completion_errors_total{",
		"rdmarun_exporter_config_last_reload_successful ", "rdmarun_exporter_scheduler_lag_seconds",
		"rdmarun_port_collector_errors ", "rdmarun_exporter_build_info{", "go_goroutines ", "process_start_time_seconds ",
		"rdmarun_exporter_targets_over_limit{",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	promtoolCheck(t, []byte(body))
}
