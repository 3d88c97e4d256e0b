package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// TestResponderSettings: the responder section becomes the settings
// rdmarun serve's flags would give, named by the section's keys: the
// defaults are serve's, max_sessions 0 keeps none, responder.device
// comes before the exporter's --device.
func TestResponderSettings(t *testing.T) {
	c, err := config.Parse([]byte("responder: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := peer.ResponderConfig{Listen: ":18520", Device: "flag0", Port: 1, GIDIndex: rdma.AutoGIDIndex, CMPort: ctrl.DefaultCMPort,
		MaxTest: 10 * time.Minute, MaxConcurrent: 4, MaxSessions: 256, MaxIdle: 5 * time.Minute, MaxMemory: 1 << 30, MaxQPs: 64, Keys: responderKeys}
	if got := responderSettings(c.Responder, "flag0"); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
	c, err = config.Parse([]byte(`responder:
  listen: 10.0.0.1:1
  device: mlx5_1
  device_port: 2
  token_file: /etc/rdmarun/token
  allow_unauthenticated: true
  tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem, relay_ca_file: relay-ca.pem}
  relay: false
  cm_port: -1
  max_test: 1m
  max_concurrent: 2
  max_sessions: 0
  session_idle: 30s
  max_memory: 256MiB
  max_qps: 8
`))
	if err != nil {
		t.Fatal(err)
	}
	want = peer.ResponderConfig{Listen: "10.0.0.1:1", Device: "mlx5_1", Port: 2, GIDIndex: rdma.AutoGIDIndex, TokenFile: "/etc/rdmarun/token", AllowUnauthenticated: true,
		TLS: ctrl.TLSConfig{CertFile: "c.pem", KeyFile: "k.pem", CAFile: "ca.pem"}, RelayCA: "relay-ca.pem", NoRelay: true, CMPort: -1,
		MaxTest: time.Minute, MaxConcurrent: 2, MaxSessions: -1, MaxIdle: 30 * time.Second, MaxMemory: 256 << 20, MaxQPs: 8, Keys: responderKeys}
	if got := responderSettings(c.Responder, "flag0"); !reflect.DeepEqual(got, want) {
		t.Errorf("every key:\n got %+v\nwant %+v", got, want)
	}
}

// TestResponderKeysAreKeys: every key a refusal or log names is a key of
// the responder's section (the key path, up to any ": value" hint), so
// an operator finds the line to change.
func TestResponderKeysAreKeys(t *testing.T) {
	keys := map[string]bool{}
	var walk func(prefix string, rt reflect.Type)
	walk = func(prefix string, rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			keys[prefix+tag] = true
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
				walk(prefix+tag+".", f.Type)
			}
		}
	}
	walk("responder.", reflect.TypeFor[config.Responder]())
	var check func(v reflect.Value)
	check = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() == reflect.Struct {
				check(f)
				continue
			}
			key, _, _ := strings.Cut(f.String(), ":")
			if !keys[key] {
				t.Errorf("%s.%s is %q, not a key of the responder's section", v.Type().Name(), v.Type().Field(i).Name, f.String())
			}
		}
	}
	check(reflect.ValueOf(responderKeys))
}
