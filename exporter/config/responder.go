package config

import (
	"errors"
	"fmt"

	"github.com/rdmarun/rdmarun/ctrl"
)

// Responder is the in-process responder that lets other exporters probe
// this node.
type Responder struct {
	Enabled   bool   `yaml:"enabled"`
	Listen    string `yaml:"listen"`
	Device    string `yaml:"device"`
	TokenFile string `yaml:"token_file"`
	TLS       TLS    `yaml:"tls"`
	// AllowUnauthenticated is the operator's explicit word that the
	// responder may serve a network address without a token or client
	// certificates. Without it such a responder stays off.
	AllowUnauthenticated bool `yaml:"allow_unauthenticated"`
}

// TLS protects the responder's control channel, which carries rkeys.
type TLS struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
}

// Ctrl is the control channel's form of the settings.
func (t TLS) Ctrl() ctrl.TLSConfig {
	return ctrl.TLSConfig{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.ClientCAFile}
}

// defaultResponder is what a responder takes for absent keys.
var defaultResponder = Responder{Enabled: true, Listen: ":18520"}

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
	tls := r.TLS
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		return errors.New("responder: tls: cert_file and key_file go together")
	}
	if tls.ClientCAFile != "" && tls.CertFile == "" {
		return errors.New("responder: tls: client_ca_file needs cert_file and key_file")
	}
	return nil
}
