package main

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner"
)

// where is the command line's say over where a scenario runs; an empty
// field leaves the scenario's own setting.
type where struct {
	device     string
	port       int
	gidIndex   string
	peer       string
	peerDevice string
	tokenFile  string
	tls        ctrl.TLSConfig
	// waitResponders is --wait-for-responders: how long a fleet run
	// waits for every host's responder to accept a connection; 0: not.
	waitResponders time.Duration
}

// addTLSFlags registers the client's token and TLS flags, shared by run and bench.
func (c *where) addTLSFlags(cmd *kingpin.CmdClause) {
	addTokenFlag(cmd, &c.tokenFile)
	cmd.Flag("tls-ca", "Connect with TLS, trusting this CA (PEM).").StringVar(&c.tls.CAFile)
	cmd.Flag("tls-cert", "Client certificate for TLS (PEM).").StringVar(&c.tls.CertFile)
	cmd.Flag("tls-key", "Private key of --tls-cert (PEM).").StringVar(&c.tls.KeyFile)
}

// openTarget is (*where).target; tests replace it to run the whole
// command, report and progress included, on runs they answer themselves.
var openTarget = (*where).target

// target builds where the scenario runs, flags over the scenario's own
// settings.
func (c *where) target(sc *runner.Scenario) (runner.Target, error) {
	local := runner.Endpoint{Device: sc.Device, Port: sc.Port, GIDIndex: sc.GIDIndex}
	if c.device != "" {
		local.Device = c.device
	}
	if c.port != 0 {
		local.Port = c.port
	}
	if c.gidIndex != "" {
		g, err := parseGID(c.gidIndex)
		if err != nil {
			return nil, &exitError{exitInvalid, err}
		}
		local.GIDIndex = g
	}
	if local.Device == "" || local.Device == "auto" {
		d, err := firstActiveDevice(max(local.Port, 1))
		if err != nil {
			return nil, err
		}
		local.Device = d
	}
	peer, peerDev := sc.Peer, sc.PeerDevice
	if c.peer != "" {
		peer = c.peer
	}
	if c.peerDevice != "" {
		peerDev = c.peerDevice
	}
	if peer == "" || peer == "loopback" {
		if peerDev == "" {
			peerDev = local.Device
		}
		return &runner.Loopback{Local: local, Peer: runner.Endpoint{Device: peerDev, Port: local.Port, GIDIndex: local.GIDIndex}, MaxMessage: sc.MaxSize()}, nil
	}
	token, tlsCfg, err := c.credentials(sc)
	if err != nil {
		return nil, err
	}
	r := &runner.Remote{Addr: peer, Local: local, PeerDevice: peerDev, Token: token, TLS: tlsCfg}
	if local.GIDIndex != rdma.AutoGIDIndex {
		g := local.GIDIndex
		r.PeerGID = &g
	}
	return r, nil
}

// credentials are the token and TLS a client presents to rdmarun serve:
// the flags' over the scenario's.
func (c *where) credentials(sc *runner.Scenario) (string, *tls.Config, error) {
	tokenFile := sc.TokenFile
	if c.tokenFile != "" {
		tokenFile = c.tokenFile
	}
	token, err := readToken(tokenFile)
	if err != nil {
		return "", nil, &exitError{exitInvalid, err}
	}
	tlsFiles := sc.TLS
	if c.tls != (ctrl.TLSConfig{}) {
		tlsFiles = &c.tls
	}
	if tlsFiles == nil {
		return token, nil, nil
	}
	cfg, err := tlsFiles.ClientConfig()
	if err != nil {
		return "", nil, &exitError{exitInvalid, err}
	}
	return token, cfg, nil
}

// relay is how a fleet scenario reaches its hosts. The flags that place
// one pair's ends (--peer, --device, ...) have no meaning across a fleet
// and are refused; --gid-index applies to both ends of every pair.
func (c *where) relay(sc *runner.Scenario, file string) (runner.Relay, error) {
	var given []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"--peer", c.peer != ""}, {"--device", c.device != ""}, {"--peer-device", c.peerDevice != ""}, {"--port", c.port != 0}} {
		if f.set {
			given = append(given, f.name)
		}
	}
	if len(given) > 0 {
		return runner.Relay{}, &exitError{exitInvalid, fmt.Errorf("%s: %s cannot be used with a fleet scenario (it names hosts:); list each host's devices in the file (devices:), and set the port on each host's rdmarun serve", file, strings.Join(given, ", "))}
	}
	if c.gidIndex != "" {
		g, err := parseGID(c.gidIndex)
		if err != nil {
			return runner.Relay{}, &exitError{exitInvalid, err}
		}
		sc.GIDIndex = g
	}
	token, tlsCfg, err := c.credentials(sc)
	if err != nil {
		return runner.Relay{}, err
	}
	return runner.Relay{Token: token, TLS: tlsCfg}, nil
}

// firstActiveDevice is the device a client tests from when none is
// named: the responder's rule (peer.FirstActive), with this command's
// exit codes.
func firstActiveDevice(port int) (string, error) {
	devs, err := listDevices()
	if err == nil {
		var name string
		if name, err = peer.FirstActive(devs, port); err == nil {
			return name, nil
		}
	}
	return "", environmentError(err)
}
