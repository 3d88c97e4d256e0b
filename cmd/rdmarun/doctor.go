package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rdmarun/rdmarun/doctor"
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
}

func newDoctorCmd(app *kingpin.Application) *doctorCmd {
	c := &doctorCmd{}
	cmd := app.Command("doctor", "Check what makes RDMA tests slow or fail on this host: limits, link, PCIe, NUMA, MTU, GIDs, CPU frequency, huge pages, RoCE congestion. Exits 1 when a check fails, 4 when there is no RDMA device.")
	cmd.Flag("device", "Check only this RDMA device (see rdmarun devices).").StringVar(&c.device)
	cmd.Flag("port", "Check only this port.").IntVar(&c.port)
	cmd.Flag("cpus", "The CPUs tests will pin to, e.g. 0-3,8: checked against the device's NUMA node.").StringVar(&c.cpus)
	cmd.Flag("json", "Print JSON instead of a table.").BoolVar(&c.asJSON)
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
	} else if devs, err := listDevices(); err == nil {
		// Only verbs knows a port's MTU; without it (no libibverbs,
		// or a build without cgo) those checks say cannot_tell.
		env.PortMTU = doctor.MTUsOf(devs)
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
	var err error
	if c.asJSON {
		err = doctor.WriteJSON(stdout, r)
	} else {
		err = doctor.WriteText(stdout, r)
	}
	if err != nil {
		return err
	}
	if len(r.Devices) == 0 {
		return environmentError(rdma.ErrNoDevice)
	}
	if r.Failed() {
		var failed []string
		for _, ch := range r.Checks {
			if ch.Status == doctor.Fail {
				failed = append(failed, ch.Name)
			}
		}
		return &exitError{exitFailed, errors.New("failed checks: " + strings.Join(failed, ", "))}
	}
	return nil
}

func hasPort(r doctor.Report, port int) bool {
	for _, ch := range r.Checks {
		if ch.Port == port {
			return true
		}
	}
	return false
}
