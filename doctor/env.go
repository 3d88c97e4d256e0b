package doctor

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/rdma"
)

// Env is what the doctor looks at, and for what.
type Env struct {
	Sys  string // the sysfs mount, normally /sys
	Proc string // the procfs mount, normally /proc
	Dev  string // the device nodes, normally /dev

	// Device and Port restrict the device and port checks; empty and 0
	// check every one.
	Device string
	Port   int
	// CPUs are the CPUs tests will pin to; nil when not given, and the
	// NUMA check then says where they should be.
	CPUs []int

	// PortMTU is the port's active and maximum MTU in bytes, which only
	// the verbs interface reports (sysfs has no file for them); ok is
	// false when it is not known. Nil: never known.
	PortMTU func(device string, port int) (active, maximum int, ok bool)
	// Verbs lists the devices as the verbs interface does (rdma.Devices),
	// with each port's GID table from one ioctl; nil when verbs was not
	// asked. The doctor takes the GIDs from it rather than from sysfs,
	// whose table costs three file reads per slot: rxe has 1,024 slots,
	// seconds of CPU under emulation.
	Verbs []rdma.Device
	// Ethtool reads a netdev's ethtool statistics; nil when they are not
	// read.
	Ethtool func(netdev string) (map[string]uint64, error)
}

// HostEnv is the running host's files.
func HostEnv() Env {
	return Env{Sys: "/sys", Proc: "/proc", Dev: "/dev", Ethtool: ethtool.Stats}
}

// WithVerbs is env with what only the verbs interface knows: each port's
// MTUs, which sysfs has no file for, and the GID tables, which spare the
// doctor reading sysfs's slot by slot. list is rdma.Devices, or what
// stands in for it in a test; when it fails (no libibverbs, a build
// without cgo) env comes back as it was, and the MTU checks say
// cannot_tell.
func (env Env) WithVerbs(list func() ([]rdma.Device, error)) Env {
	if devs, err := list(); err == nil {
		env.PortMTU = mtusOf(devs)
		env.Verbs = devs
	}
	return env
}

// EnvAt is a host's files saved under root: root/sys, root/proc and
// root/dev as on the host; root/devices.json, the output of `rdmarun
// devices --json` there, for the ports' MTUs; and root/ethtool/NETDEV,
// the output of `ethtool -S NETDEV` there. Tests and bug reports use it.
func EnvAt(root string) (Env, error) {
	env := Env{
		Sys:  filepath.Join(root, "sys"),
		Proc: filepath.Join(root, "proc"),
		Dev:  filepath.Join(root, "dev"),
	}
	b, err := os.ReadFile(filepath.Join(root, "devices.json"))
	switch {
	case err == nil:
		var saved struct {
			Devices []rdma.Device `json:"devices"`
		}
		if err := json.Unmarshal(b, &saved); err != nil {
			return env, errors.New(filepath.Join(root, "devices.json") + ": " + err.Error())
		}
		env.PortMTU = mtusOf(saved.Devices)
	case !errors.Is(err, fs.ErrNotExist):
		return env, err
	}
	dir := filepath.Join(root, "ethtool")
	if _, err := os.Stat(dir); err == nil {
		env.Ethtool = func(netdev string) (map[string]uint64, error) {
			if strings.ContainsAny(netdev, `/\`) || netdev == "" || netdev == "." || netdev == ".." {
				return nil, errors.New("invalid netdev name " + netdev)
			}
			b, err := os.ReadFile(filepath.Join(dir, netdev))
			if err != nil {
				return nil, err
			}
			return ethtool.Parse(string(b))
		}
	}
	return env, nil
}

// mtusOf answers Env.PortMTU from devices as the verbs interface lists
// them (rdma.Devices).
func mtusOf(devs []rdma.Device) func(string, int) (int, int, bool) {
	return func(device string, port int) (int, int, bool) {
		for _, d := range devs {
			if d.Name != device {
				continue
			}
			for _, p := range d.Ports {
				if p.Num == port && p.ActiveMTU > 0 {
					return p.ActiveMTU, p.MaxMTU, true
				}
			}
		}
		return 0, 0, false
	}
}

// read returns the trimmed content of a file.
func read(path ...string) (string, error) {
	b, err := os.ReadFile(filepath.Join(path...))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// why is an error as a finding: the file's own reason, without the
// path the check already names.
func why(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
