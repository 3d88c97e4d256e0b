package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/sysfs"
)

// doctorCmd runs the host's checks (package doctor) and exits 1 when one
// fails, so CI and node health checks can gate on it.
type doctorCmd struct {
	device string
	port   int
	cpus   string
	asJSON bool
	// root reads a host saved as doctor.EnvAt describes instead of this
	// one: for tests and for looking at another host's files.
	root string
	// peer is a responder (rdmarun serve) whose host's checks are
	// fetched and whose MTUs mtu.peer compares with this host's.
	peer       string
	peerDevice string
	tokenFile  string
	tls        ctrl.TLSConfig
}

func newDoctorCmd(app *kingpin.Application) *doctorCmd {
	c := &doctorCmd{}
	cmd := app.Command("doctor", "Check what makes RDMA tests slow or fail on this host: limits, link, PCIe, NUMA, MTU, GIDs, CPU frequency, huge pages, RoCE congestion. Exits 1 when a check fails, 4 when there is no RDMA device.")
	cmd.Flag("device", "Check only this RDMA device (see rdmarun devices).").StringVar(&c.device)
	cmd.Flag("port", "Check only this port.").IntVar(&c.port)
	cmd.Flag("cpus", "The CPUs tests will pin to, e.g. 0-3,8: checked against the device's NUMA node.").StringVar(&c.cpus)
	cmd.Flag("json", "Print JSON instead of a table.").BoolVar(&c.asJSON)
	cmd.Flag("peer", "HOST[:PORT] of an rdmarun serve: check that host too and compare the MTUs of both ends (mtu.peer).").StringVar(&c.peer)
	cmd.Flag("peer-device", "The far end's device (default: its --device).").StringVar(&c.peerDevice)
	addTokenFlag(cmd, &c.tokenFile)
	cmd.Flag("tls-ca", "Connect to --peer with TLS, trusting this CA (PEM).").StringVar(&c.tls.CAFile)
	cmd.Flag("tls-cert", "Client certificate for TLS (PEM).").StringVar(&c.tls.CertFile)
	cmd.Flag("tls-key", "Private key of --tls-cert (PEM).").StringVar(&c.tls.KeyFile)
	cmd.Flag("root", "Read a saved host's files under this directory instead of this host's.").Hidden().StringVar(&c.root)
	return c
}

func (c *doctorCmd) run(stdout io.Writer) error {
	if c.port < 0 || c.port > 255 {
		return &exitError{exitInvalid, fmt.Errorf("--port %d out of range 1..255", c.port)}
	}
	env := doctor.HostEnv()
	if c.root != "" {
		var err error
		if env, err = doctor.EnvAt(c.root); err != nil {
			return &exitError{exitInvalid, fmt.Errorf("--root: %w", err)}
		}
	} else {
		env = env.WithVerbs(listDevices)
	}
	if c.cpus != "" {
		cpus, err := doctor.ParseCPUs(c.cpus)
		if err != nil {
			return &exitError{exitInvalid, fmt.Errorf("--cpus: %w", err)}
		}
		env.CPUs = cpus
	}
	env.Device, env.Port = c.device, c.port
	r := doctor.Run(env)
	if len(r.Devices) == 0 && c.device != "" {
		if all, _ := sysfs.DeviceNames(filepath.Join(env.Sys, "class", "infiniband")); len(all) > 0 {
			return &exitError{exitInvalid, fmt.Errorf("no RDMA device %s; devices: %s", c.device, strings.Join(all, ", "))}
		}
	}
	if c.port != 0 && len(r.Devices) > 0 && !hasPort(r, c.port) {
		return &exitError{exitInvalid, fmt.Errorf("no port %d on %s; run rdmarun devices to list ports", c.port, strings.Join(r.Devices, ", "))}
	}
	if c.peer == "" || len(r.Devices) == 0 {
		if err := writeReport(stdout, r, c.asJSON); err != nil {
			return err
		}
		if len(r.Devices) == 0 {
			return environmentError(rdma.ErrNoDevice)
		}
		return failedChecks(r, nil, "")
	}
	far, err := c.fetchPeer()
	if err != nil {
		return err
	}
	r.SetPeerMTU(doctor.MTUs(env), far.MTUs[0], c.peer)
	r.Checks = append(r.Checks, c.peerCM(env, far))
	if err := c.writeBoth(stdout, r, far); err != nil {
		return err
	}
	return failedChecks(r, &far.Report, c.peer)
}

// peerCM is the cm.peer check against the far end: it resolves from this
// host, so a saved host (--root) has none.
func (c *doctorCmd) peerCM(env doctor.Env, far *peer.FarReport) doctor.Check {
	if c.root != "" {
		return doctor.Check{Name: "cm.peer", Device: c.device, Port: c.port, Status: doctor.NotApplicable,
			Expected: "rdma_cm resolves the far device's address from this device's", Found: "a saved host (--root) resolves nothing"}
	}
	return doctor.PeerCM(env, far.CM, c.peer, rdma.ResolveCM)
}

// fetchPeer asks --peer for its host's checks; a far end without a
// device, or one that cannot be asked, is the environment's failure.
func (c *doctorCmd) fetchPeer() (*peer.FarReport, error) {
	token, err := readToken(c.tokenFile)
	if err != nil {
		return nil, &exitError{exitInvalid, err}
	}
	cfg := peer.ClientConfig{Addr: c.peer, Token: token}
	if c.tls != (ctrl.TLSConfig{}) {
		if cfg.TLS, err = c.tls.ClientConfig(); err != nil {
			return nil, &exitError{exitInvalid, err}
		}
	}
	far, err := peer.Doctor(context.Background(), cfg, c.peerDevice, 0)
	if err != nil {
		return nil, &exitError{exitEnvironment, err}
	}
	if len(far.MTUs) == 0 {
		return nil, &exitError{exitEnvironment, fmt.Errorf("the far end %s found no RDMA device to compare with", c.peer)}
	}
	return far, nil
}

// writeBoth prints this host's report, then the far end's under its
// name; as JSON, both reports in one object.
func (c *doctorCmd) writeBoth(w io.Writer, local doctor.Report, far *peer.FarReport) error {
	if c.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		type farJSON struct {
			Host   string        `json:"host"`
			Report doctor.Report `json:"report"`
		}
		return enc.Encode(struct {
			Local doctor.Report `json:"local"`
			Peer  farJSON       `json:"peer"`
		}{local, farJSON{c.peer, far.Report}})
	}
	if _, err := fmt.Fprintln(w, "== this host"); err != nil {
		return err
	}
	if err := doctor.WriteText(w, local); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\n== far end %s (%s)\n", c.peer, strings.Join(far.Report.Devices, ", ")); err != nil {
		return err
	}
	return doctor.WriteText(w, far.Report)
}

func writeReport(w io.Writer, r doctor.Report, asJSON bool) error {
	if asJSON {
		return doctor.WriteJSON(w, r)
	}
	return doctor.WriteText(w, r)
}

// failedChecks is the exit for this host's report and the far end's
// (nil without --peer, named peer): 1 naming every failed check, or nil.
func failedChecks(local doctor.Report, far *doctor.Report, peer string) error {
	var parts []string
	if names := failedNames(local); names != "" {
		parts = append(parts, "failed checks: "+names)
	}
	if far != nil {
		if names := failedNames(*far); names != "" {
			parts = append(parts, "failed checks on "+peer+": "+names)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &exitError{exitFailed, errors.New(strings.Join(parts, "; "))}
}

func failedNames(r doctor.Report) string {
	var failed []string
	for _, ch := range r.Checks {
		if ch.Status == doctor.Fail {
			failed = append(failed, ch.Name)
		}
	}
	return strings.Join(failed, ", ")
}

func hasPort(r doctor.Report, port int) bool {
	for _, ch := range r.Checks {
		if ch.Port == port {
			return true
		}
	}
	return false
}
