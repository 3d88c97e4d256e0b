package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// TestServeSettings: serve's flags become the responder's settings, the
// defaults included, with the flags' names for its messages.
func TestServeSettings(t *testing.T) {
	parse := func(args ...string) peer.ResponderConfig {
		t.Helper()
		app := kingpin.New("rdmarun", "")
		c := newServeCmd(app)
		if _, err := app.Parse(append([]string{"serve"}, args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := c.settings()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Devices == nil {
			t.Error("no device lister: the device choice would bypass listDevices")
		}
		cfg.Devices = nil
		return cfg
	}
	defaults := peer.ResponderConfig{Listen: ":" + ctrl.DefaultPort, Port: 1, GIDIndex: rdma.AutoGIDIndex, CMPort: ctrl.DefaultCMPort,
		MaxTest: 10 * time.Minute, MaxConcurrent: 4, MaxSessions: 256, MaxIdle: 5 * time.Minute, MaxMemory: 1 << 30, MaxQPs: 64, Keys: peer.ServeKeys}
	if got := parse(); !reflect.DeepEqual(got, defaults) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, defaults)
	}
	got := parse("--listen", "10.0.0.1:1", "--device", "mlx5_1", "--port", "2", "--gid-index", "3", "--token-file", "tok",
		"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem", "--tls-ca", "relay-ca.pem", "--no-relay",
		"--no-cm", "--max-test", "1m", "--max-concurrent", "2", "--max-sessions", "0", "--session-idle", "30s",
		"--max-memory", "256MiB", "--max-qps", "8", "--allow-unauthenticated")
	want := peer.ResponderConfig{Listen: "10.0.0.1:1", Device: "mlx5_1", Port: 2, GIDIndex: 3, TokenFile: "tok", AllowUnauthenticated: true,
		TLS: ctrl.TLSConfig{CertFile: "c.pem", KeyFile: "k.pem", CAFile: "ca.pem"}, RelayCA: "relay-ca.pem", NoRelay: true, CMPort: -1,
		MaxTest: time.Minute, MaxConcurrent: 2, MaxSessions: -1, MaxIdle: 30 * time.Second, MaxMemory: 256 << 20, MaxQPs: 8, Keys: peer.ServeKeys}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("every flag:\n got %+v\nwant %+v", got, want)
	}
}
