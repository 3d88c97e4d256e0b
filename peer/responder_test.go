package peer

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

func TestFirstActive(t *testing.T) {
	dev := func(name string, states ...string) rdma.Device {
		d := rdma.Device{Name: name}
		for i, s := range states {
			d.Ports = append(d.Ports, rdma.Port{Num: i + 1, State: s})
		}
		return d
	}
	devs := []rdma.Device{dev("down0", "DOWN", "DOWN"), dev("half0", "DOWN", "ACTIVE"), dev("up0", "ACTIVE")}
	for _, tc := range []struct {
		devs    []rdma.Device
		port    int
		want    string
		wantErr string
	}{
		{devs: devs, port: 1, want: "up0"},
		{devs: devs, port: 2, want: "half0"},
		{devs: devs, port: 3, wantErr: "no device has an ACTIVE port 3 (see rdmarun devices)"},
		{devs: nil, port: 1, wantErr: rdma.ErrNoDevice.Error()},
	} {
		got, err := FirstActive(tc.devs, tc.port)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
			t.Errorf("FirstActive(port %d) = %q, %v; want %q, %q", tc.port, got, err, tc.want, tc.wantErr)
		}
	}
	if _, err := FirstActive(nil, 1); !errors.Is(err, rdma.ErrNoDevice) {
		t.Errorf("no devices: %v, want rdma.ErrNoDevice", err)
	}
}

// exporterKeys are keys of a program other than rdmarun serve, as
// rdmarun_exporter names its settings.
var exporterKeys = ResponderKeys{
	LimitKeys: LimitKeys{Concurrent: "responder.max_concurrent", Memory: "responder.max_memory", QPs: "responder.max_qps", Test: "responder.max_test",
		Device: "responder.device", Unauthenticated: "responder.allow_unauthenticated", Relay: "responder.relay"},
	TokenFile: "responder.token_file", RelayCA: "responder.tls.relay_ca_file", NoCM: "responder.cm_port: -1",
}

// NewResponder refuses what its settings cannot serve, each error naming
// the setting as the program that embeds the responder writes it.
func TestNewResponderRefuses(t *testing.T) {
	dir := t.TempDir()
	token := writeToken(t, t.TempDir(), "fleet")
	empty := writeToken(t, t.TempDir(), "")
	t.Setenv(ctrl.TokenEnv, "")
	for _, tc := range []struct {
		name string
		cfg  ResponderConfig
		key  string // of the *SettingError; "" for none
		is   error
		want string
	}{
		{name: "token file missing", cfg: ResponderConfig{Listen: ":0", TokenFile: filepath.Join(dir, "none")}, key: "--token-file", is: fs.ErrNotExist,
			want: "--token-file: token file: open " + filepath.Join(dir, "none") + ": no such file or directory"},
		{name: "token file empty", cfg: ResponderConfig{Listen: ":0", TokenFile: empty, Keys: exporterKeys}, key: "responder.token_file",
			want: "responder.token_file: token file " + empty + " is empty"},
		// Allowing unauthenticated clients does not cover a token file
		// that is named and cannot be read: that is a mistake.
		{name: "token file missing, allowed", cfg: ResponderConfig{Listen: ":0", TokenFile: filepath.Join(dir, "none"), AllowUnauthenticated: true}, key: "--token-file", is: fs.ErrNotExist},
		{name: "network address, nothing to tell clients apart", cfg: ResponderConfig{Listen: ":0"}, is: ctrl.ErrUnauthenticated,
			want: "a responder on :0 is reachable from the network and has no token and no client certificates, so anyone who connects gets rkeys to this host's registered memory"},
		{name: "server TLS alone", cfg: ResponderConfig{Listen: "10.0.0.1:0", TLS: ctrl.TLSConfig{CertFile: "c.pem", KeyFile: "k.pem"}}, is: ctrl.ErrUnauthenticated},
		{name: "relay CA missing", cfg: ResponderConfig{Listen: "127.0.0.1:0", TokenFile: token, RelayCA: filepath.Join(dir, "ca.pem"), Keys: exporterKeys}, key: "responder.tls.relay_ca_file",
			want: "responder.tls.relay_ca_file: ctrl: TLS CAFile " + filepath.Join(dir, "ca.pem") + " does not exist"},
		{name: "server certificate missing", cfg: ResponderConfig{Listen: "127.0.0.1:0", TLS: ctrl.TLSConfig{CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem")}},
			want: "ctrl: TLS CertFile " + filepath.Join(dir, "c.pem") + " does not exist\nctrl: TLS KeyFile " + filepath.Join(dir, "k.pem") + " does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewResponder(tc.cfg)
			if err == nil {
				t.Fatalf("NewResponder = %+v, want an error", r)
			}
			var se *SettingError
			if got := errors.As(err, &se); got != (tc.key != "") || got && se.Key != tc.key {
				t.Errorf("%v: want a *SettingError of %q: %v", err, tc.key, got)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v does not match %v", err, tc.is)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

// Without a device named, Listen answers on the first device whose
// configured port is ACTIVE, or fails naming the device's key.
func TestResponderDeviceChoice(t *testing.T) {
	devs := []rdma.Device{{Name: "a0", Ports: []rdma.Port{{Num: 1, State: "ACTIVE"}, {Num: 2, State: "DOWN"}}},
		{Name: "b0", Ports: []rdma.Port{{Num: 1, State: "DOWN"}, {Num: 2, State: "ACTIVE"}}}}
	list := func() ([]rdma.Device, error) { return devs, nil }
	for _, tc := range []struct {
		name    string
		cfg     ResponderConfig
		want    string
		wantErr string
	}{
		{name: "named", cfg: ResponderConfig{Device: "c0"}, want: "c0"},
		{name: "port 1", cfg: ResponderConfig{}, want: "a0"},
		{name: "port 2", cfg: ResponderConfig{Port: 2}, want: "b0"},
		{name: "no port ACTIVE", cfg: ResponderConfig{Port: 3}, wantErr: "--device: none named, and no device has an ACTIVE port 3 (see rdmarun devices)"},
		{name: "no port ACTIVE, the exporter's key", cfg: ResponderConfig{Port: 3, Keys: exporterKeys}, wantErr: "responder.device: none named, and no device has an ACTIVE port 3 (see rdmarun devices)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Listen, cfg.CMPort, cfg.Devices = "127.0.0.1:0", -1, list
			r, err := NewResponder(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Listen()
			if tc.wantErr != "" {
				var se *SettingError
				if !errors.As(err, &se) || err.Error() != tc.wantErr {
					t.Errorf("Listen: %v, want the *SettingError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.ln.Close()
			if r.Device() != tc.want || r.Server().cfg.Device != tc.want {
				t.Errorf("device %q, server's %q; want %q", r.Device(), r.Server().cfg.Device, tc.want)
			}
		})
	}
	none := ResponderConfig{Listen: "127.0.0.1:0", Devices: func() ([]rdma.Device, error) { return nil, nil }}
	r, err := NewResponder(none)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Listen(); !errors.Is(err, rdma.ErrNoDevice) {
		t.Errorf("a host without devices: %v, want rdma.ErrNoDevice", err)
	}
}

// The settings reach the server: its limits and the keys its refusals
// name, the relay settings, the TLS its relays dial with.
func TestResponderSettings(t *testing.T) {
	t.Setenv(ctrl.TokenEnv, "")
	dir := t.TempDir()
	cfg := ResponderConfig{Listen: "127.0.0.1:0", Device: "none", Port: 2, GIDIndex: 3, TokenFile: writeToken(t, dir, "fleet"),
		AllowUnauthenticated: true, NoRelay: true, CMPort: -1,
		MaxTest: time.Minute, MaxConcurrent: 2, MaxSessions: -1, MaxIdle: time.Second, MaxMemory: 1 << 20, MaxQPs: 3, Keys: exporterKeys}
	r, err := NewResponder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Listen(); err != nil {
		t.Fatal(err)
	}
	defer r.ln.Close()
	got := r.Server().cfg
	if got.Device != "none" || got.Port != 2 || got.GIDIndex != 3 || got.Token != "fleet" || !got.RelayUnauthenticated || !got.NoRelay ||
		got.MaxTest != time.Minute || got.MaxConcurrent != 2 || got.MaxSessions != -1 || got.MaxIdle != time.Second || got.MaxMemory != 1<<20 || got.MaxQPs != 3 ||
		got.LimitKeys != exporterKeys.LimitKeys || got.DialTLS != nil {
		t.Errorf("server config %+v", got)
	}
	// Loopback, where a responder needs nothing to tell clients apart:
	// not open, though allowed to be.
	if r.Open() {
		t.Error("a responder with a token is open")
	}
	if _, err := r.ReloadToken(""); err == nil || !strings.Contains(err.Error(), "turn authentication off") {
		t.Errorf("reloading no token over a token: %v, want a refusal", err)
	}
}

// serveResponder runs r until the test ends.
func serveResponder(t *testing.T, r *Responder) string {
	t.Helper()
	if err := r.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r.Addr().String()
}

// handshake is a client's token handshake with the responder at addr.
func handshake(t *testing.T, addr, token string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctrl.Client(ctx, nc, token)
	if err == nil {
		c.Close()
	}
	return err
}

// ReloadToken rotates the token for new connections; a file that cannot
// be read, or is empty, keeps the token in force.
func TestResponderReloadToken(t *testing.T) {
	dir := t.TempDir()
	file := writeToken(t, dir, "first")
	r, err := NewResponder(ResponderConfig{Listen: "127.0.0.1:0", Device: "none", TokenFile: file, CMPort: -1, Keys: exporterKeys})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveResponder(t, r)
	if err := handshake(t, addr, "first"); err != nil {
		t.Fatalf("the first token: %v", err)
	}
	if changed, err := r.ReloadToken(file); changed || err != nil {
		t.Errorf("the same token again: changed %v, %v; want no change", changed, err)
	}
	writeToken(t, dir, "second")
	if changed, err := r.ReloadToken(file); !changed || err != nil {
		t.Errorf("a rotated token: changed %v, %v", changed, err)
	}
	if err := handshake(t, addr, "second"); err != nil {
		t.Errorf("the rotated token: %v", err)
	}
	if err := handshake(t, addr, "first"); !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("the old token after the rotation: %v, want ctrl.ErrAuth", err)
	}
	for name, change := range map[string]func(){
		"empty":   func() { writeToken(t, dir, "") },
		"missing": func() { os.Remove(file) },
	} {
		change()
		changed, err := r.ReloadToken(file)
		var se *SettingError
		if changed || !errors.As(err, &se) || se.Key != "responder.token_file" || strings.Contains(err.Error(), "second") {
			t.Errorf("a token file %s: changed %v, %v; want the setting's error, without the token", name, changed, err)
		}
		if err := handshake(t, addr, "second"); err != nil {
			t.Errorf("the token in force after a file %s: %v", name, err)
		}
	}
}

// An open responder (allowed, and no token) that is given a token by a
// reload tells clients apart from then on.
func TestResponderReloadClosesOpen(t *testing.T) {
	host := nonLoopback(t)
	t.Setenv(ctrl.TokenEnv, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	r, err := NewResponder(ResponderConfig{Listen: net.JoinHostPort(host, "0"), Device: "none", AllowUnauthenticated: true, CMPort: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Open() {
		t.Fatal("a responder on a network address without a token, allowed, is not open")
	}
	addr := serveResponder(t, r)
	if err := handshake(t, addr, ""); err != nil {
		t.Fatalf("open: %v", err)
	}
	writeToken(t, dir, "fleet")
	if changed, err := r.ReloadToken(file); !changed || err != nil {
		t.Fatalf("the first token: changed %v, %v", changed, err)
	}
	if r.Open() {
		t.Error("still open with a token")
	}
	if err := handshake(t, addr, ""); !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("no token after the reload: %v, want ctrl.ErrAuth", err)
	}
	if err := handshake(t, addr, "fleet"); err != nil {
		t.Errorf("the token: %v", err)
	}
}

// A responder with relays off refuses a coordinator's relay, naming the
// setting.
func TestResponderNoRelay(t *testing.T) {
	spec, err := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Iterations: 10}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	off, err := NewResponder(ResponderConfig{Listen: "127.0.0.1:0", Device: "none", TokenFile: writeToken(t, dir, "fleet"), NoRelay: true, CMPort: -1, Keys: exporterKeys})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveResponder(t, off)
	_, err = RunVia(context.Background(), ClientConfig{Addr: addr, Token: "fleet", StepTimeout: 2 * time.Second}, Remote{Addr: "127.0.0.1:1"}, spec)
	if err == nil || !strings.Contains(err.Error(), "this responder does not run tests against other responders for a coordinator (responder.relay)") {
		t.Errorf("relay to a responder with relays off: %v", err)
	}
}

// writeToken writes token to dir/token, and returns the file's name.
func writeToken(t *testing.T, dir, token string) string {
	t.Helper()
	file := filepath.Join(dir, "token")
	if token != "" {
		token += "\n"
	}
	if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
