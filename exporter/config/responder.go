package config

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/units"
)

// Responder is the in-process responder that lets other exporters probe
// this node.
type Responder struct {
	Enabled bool   `yaml:"enabled"`
	Listen  string `yaml:"listen" want:"host:port such as :18520"`
	// CMPort is where it listens for rdma_cm connections (probes of a
	// module with connect: rdma_cm); 0 lets the CM pick, -1 turns it off.
	CMPort    int    `yaml:"cm_port"`
	Device    string `yaml:"device"`
	TokenFile string `yaml:"token_file" want:"a file path"`
	TLS       TLS    `yaml:"tls"`
	// AllowUnauthenticated is the operator's explicit word that the
	// responder may serve a network address without a token or client
	// certificates. Without it such a responder stays off.
	AllowUnauthenticated bool `yaml:"allow_unauthenticated"`
	// The limits of rdmarun serve's flags of the same names: probes
	// beyond them are refused, naming these keys. The defaults are
	// serve's; a node probed by more exporters than max_concurrent at
	// once answers the rest "busy" with a retry hint.
	MaxConcurrent int           `yaml:"max_concurrent"`
	MaxMemory     string        `yaml:"max_memory" want:"a size such as 256MiB"` // e.g. 256MiB
	MaxQPs        int           `yaml:"max_qps"`
	MaxTest       time.Duration `yaml:"max_test"`
	// maxMemory is MaxMemory in bytes.
	maxMemory int64
}

// Limits are a responder's limits as the configuration sets them, in
// the responder's own units, with the keys its refusals name so that an
// operator finds the line to change. The responder is the caller's to
// build: this package only reads the file.
type Limits struct {
	MaxConcurrent int
	MaxMemory     int64 // bytes
	MaxQPs        int
	MaxTest       time.Duration
	Keys          LimitKeys
}

// LimitKeys name the limits in refusals, field for field as the
// responder's own LimitKeys (peer.LimitKeys converts from it).
type LimitKeys struct {
	Concurrent, Memory, QPs, Test string
}

// Limits returns the responder's limits and the keys that set them.
func (r Responder) Limits() Limits {
	return Limits{
		MaxConcurrent: r.MaxConcurrent, MaxMemory: r.maxMemory, MaxQPs: r.MaxQPs, MaxTest: r.MaxTest,
		Keys: LimitKeys{
			Concurrent: "responder.max_concurrent", Memory: "responder.max_memory",
			QPs: "responder.max_qps", Test: "responder.max_test",
		},
	}
}

// TLS protects the responder's control channel, which carries rkeys.
type TLS struct {
	CertFile     string `yaml:"cert_file" want:"a file path"`
	KeyFile      string `yaml:"key_file" want:"a file path"`
	ClientCAFile string `yaml:"client_ca_file" want:"a file path"`
}

// Ctrl is the control channel's form of the settings.
func (t TLS) Ctrl() ctrl.TLSConfig {
	return ctrl.TLSConfig{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.ClientCAFile}
}

// defaultResponder is what a responder takes for absent keys.
var defaultResponder = Responder{
	Enabled: true, Listen: ":" + ctrl.DefaultPort, CMPort: ctrl.DefaultCMPort,
	MaxConcurrent: 4, MaxMemory: "1GiB", maxMemory: 1 << 30, MaxQPs: 64, MaxTest: 10 * time.Minute,
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Responder) UnmarshalYAML(unmarshal func(any) error) error {
	*r = defaultResponder
	type plain Responder
	if err := unmarshal((*plain)(r)); err != nil {
		return err
	}
	if err := checkHostPort(r.Listen, true); err != nil {
		return fmt.Errorf("responder: listen: %w", err)
	}
	if err := r.checkLimits(); err != nil {
		return fmt.Errorf("responder: %w", err)
	}
	if r.CMPort < -1 || r.CMPort > 65535 {
		return fmt.Errorf("responder: cm_port: %d is not a port; write one from 0 to 65535 (0: the CM picks), or -1 for no rdma_cm listener", r.CMPort)
	}
	tls := r.TLS
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		return errors.New("responder: tls: cert_file and key_file go together")
	}
	if tls.ClientCAFile != "" && tls.CertFile == "" {
		return errors.New("responder: tls: client_ca_file needs cert_file and key_file")
	}
	return nil
}

func (r *Responder) checkLimits() error {
	switch {
	case r.MaxConcurrent < 1:
		return fmt.Errorf("max_concurrent %d: want 1 or more tests at once (the default is %d)", r.MaxConcurrent, defaultResponder.MaxConcurrent)
	case r.MaxQPs < 1:
		return fmt.Errorf("max_qps %d: want 1 or more QPs per test (the default is %d)", r.MaxQPs, defaultResponder.MaxQPs)
	case r.MaxTest <= 0:
		return fmt.Errorf("max_test %v: want a positive duration (the default is %v)", r.MaxTest, defaultResponder.MaxTest)
	}
	n, err := units.ParseBytes(r.MaxMemory)
	if err != nil {
		return fmt.Errorf("max_memory: %w", err)
	}
	if n == 0 || n > math.MaxInt64 {
		return fmt.Errorf("max_memory %s: want a positive size such as 256MiB (the default is %s)", r.MaxMemory, defaultResponder.MaxMemory)
	}
	r.maxMemory = int64(n)
	return nil
}
