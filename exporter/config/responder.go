package config

import (
	"math"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/units"
)

// Responder is the in-process responder that lets other exporters probe
// this node: rdmarun serve's, assembled by the same code
// (peer.NewResponder, from cmd/rdmarun_exporter), with a key for each of
// serve's settings. This package only reads the file.
type Responder struct {
	Enabled bool   `yaml:"enabled"`
	Listen  string `yaml:"listen" want:"host:port such as :18520"`
	// CMPort is where it listens for rdma_cm connections (probes of a
	// module with connect: rdma_cm); 0 lets the CM pick, -1 turns it off.
	CMPort int    `yaml:"cm_port"`
	Device string `yaml:"device"`
	// DevicePort is the RDMA port of the device it answers on (serve's
	// --port); the device it picks when none is named is the first whose
	// DevicePort is ACTIVE.
	DevicePort int    `yaml:"device_port"`
	TokenFile  string `yaml:"token_file" want:"a file path"`
	TLS        TLS    `yaml:"tls"`
	// AllowUnauthenticated is the operator's explicit word that the
	// responder may serve a network address without a token or client
	// certificates. Without it such a responder stays off.
	AllowUnauthenticated bool `yaml:"allow_unauthenticated"`
	// Relay answers a coordinator's relayed tests (rdmarun run of a fleet
	// scenario), in which this responder tests another on its behalf;
	// false is serve's --no-relay.
	Relay bool `yaml:"relay"`
	// The limits of rdmarun serve's flags of the same names: probes
	// beyond them are refused, naming these keys. The defaults are
	// serve's; a node probed by more exporters than max_concurrent at
	// once answers the rest "busy" with a retry hint.
	MaxConcurrent int           `yaml:"max_concurrent"`
	MaxMemory     string        `yaml:"max_memory" want:"a size such as 256MiB"` // e.g. 256MiB
	MaxQPs        int           `yaml:"max_qps"`
	MaxTest       time.Duration `yaml:"max_test"`
	// MaxSessions bounds the sessions kept between probes for the
	// exporters that probe this node again and again (0 keeps none:
	// each probe sets up its own); SessionIdle, how long one may wait
	// for its next probe. Serve's --max-sessions and --session-idle.
	MaxSessions int           `yaml:"max_sessions"`
	SessionIdle time.Duration `yaml:"session_idle"`
	// maxMemory is MaxMemory in bytes.
	maxMemory int64
}

// MaxMemoryBytes is max_memory in bytes.
func (r Responder) MaxMemoryBytes() int64 { return r.maxMemory }

// TLS protects the responder's control channel, which carries rkeys.
type TLS struct {
	CertFile     string `yaml:"cert_file" want:"a file path"`
	KeyFile      string `yaml:"key_file" want:"a file path"`
	ClientCAFile string `yaml:"client_ca_file" want:"a file path"`
	// RelayCAFile makes the responder's relayed tests dial the other
	// responder over TLS, trusting this CA and presenting cert_file, if
	// set (serve's --tls-ca).
	RelayCAFile string `yaml:"relay_ca_file" want:"a file path"`
}

// Ctrl is the control channel's form of the server's settings.
func (t TLS) Ctrl() ctrl.TLSConfig {
	return ctrl.TLSConfig{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.ClientCAFile}
}

// defaultResponder is what a responder takes for absent keys: serve's
// defaults.
var defaultResponder = Responder{
	Enabled: true, Listen: ":" + ctrl.DefaultPort, CMPort: ctrl.DefaultCMPort, DevicePort: 1, Relay: true,
	MaxConcurrent: 4, MaxMemory: "1GiB", maxMemory: 1 << 30, MaxQPs: 64, MaxTest: 10 * time.Minute,
	MaxSessions: 256, SessionIdle: 5 * time.Minute,
}

// UnmarshalYAML implements yaml.Unmarshaler. The values' meaning is
// checked once the whole file is decoded (check), where their places in
// the file are known.
func (r *Responder) UnmarshalYAML(unmarshal func(any) error) error {
	*r = defaultResponder
	type plain Responder
	return unmarshal((*plain)(r))
}

// check reports to c every value that fits its key's shape but not its
// meaning, each at its place under the responder node n (nil when the
// file has no responder section, which leaves the defaults).
func (r *Responder) check(c *yamlerr.Collector, n *yaml.Node) {
	at := func(key string, format string, args ...any) {
		c.At(valueOf(n, key), "responder."+key, format, args...)
	}
	if err := checkHostPort(r.Listen, true); err != nil {
		at("listen", "%v", err)
	}
	if r.CMPort < -1 || r.CMPort > 65535 {
		at("cm_port", "want a port from 0 to 65535 (0: the CM picks one), or -1 for no rdma_cm listener, not %d", r.CMPort)
	}
	if r.DevicePort < 1 || r.DevicePort > 255 {
		at("device_port", "want a port of the device from 1 to 255 (the default is %d), not %d", defaultResponder.DevicePort, r.DevicePort)
	}
	if r.MaxConcurrent < 1 {
		at("max_concurrent", "want 1 or more tests at once (the default is %d), not %d", defaultResponder.MaxConcurrent, r.MaxConcurrent)
	}
	if r.MaxQPs < 1 {
		at("max_qps", "want 1 or more QPs per test (the default is %d), not %d", defaultResponder.MaxQPs, r.MaxQPs)
	}
	if r.MaxTest <= 0 {
		at("max_test", "want a positive duration (the default is %v), not %v", defaultResponder.MaxTest, r.MaxTest)
	}
	if r.MaxSessions < 0 {
		at("max_sessions", "want 0 (keep none) or more sessions (the default is %d), not %d", defaultResponder.MaxSessions, r.MaxSessions)
	}
	if r.SessionIdle <= 0 {
		at("session_idle", "want a positive duration (the default is %v), not %v", defaultResponder.SessionIdle, r.SessionIdle)
	}
	switch b, err := units.ParseBytes(r.MaxMemory); {
	case err != nil:
		at("max_memory", "%v", err)
	case b == 0 || b > math.MaxInt64:
		at("max_memory", "want a positive size such as 256MiB (the default is %s), not %s", defaultResponder.MaxMemory, r.MaxMemory)
	default:
		r.maxMemory = int64(b)
	}
	tls, tn := r.TLS, valueOf(n, "tls")
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		c.At(tn, "responder.tls", "cert_file and key_file go together: give both, or neither")
	}
	if tls.ClientCAFile != "" && tls.CertFile == "" {
		c.At(tn, "responder.tls", "client_ca_file needs cert_file and key_file: clients are asked for certificates over TLS")
	}
}

// valueOf is the value of key in the mapping n, or n itself where the
// key is not written there (a default, or a merged mapping's key).
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	if n = yamlerr.Resolve(n); n.Kind != yaml.MappingNode {
		return n
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return yamlerr.Resolve(n.Content[i+1])
		}
	}
	return n
}
