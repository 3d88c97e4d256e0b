package doctorcollector

import (
	"path/filepath"

	"github.com/rdmarun/rdmarun/doctor"
)

// EnvFor is the doctor's view of the host whose RDMA devices are at
// sysfsRoot, the exporter's --sysfs.root. The default, /sys/class/infiniband,
// is the host's own /sys, /proc and /dev. A container that mounts the
// host's sysfs at /host/sys (so --sysfs.root=/host/sys/class/infiniband)
// is taken to mount /host/proc and /host/dev beside it, as
// node_exporter's deployments do; a root of any other shape (a fixture)
// keeps /proc and /dev.
func EnvFor(sysfsRoot string) doctor.Env {
	env := doctor.HostEnv()
	root := filepath.Clean(sysfsRoot)
	class := filepath.Dir(root)
	if filepath.Base(root) != "infiniband" || filepath.Base(class) != "class" {
		return env
	}
	env.Sys = filepath.Dir(class)
	if filepath.Base(env.Sys) == "sys" {
		host := filepath.Dir(env.Sys)
		env.Proc = filepath.Join(host, "proc")
		env.Dev = filepath.Join(host, "dev")
	}
	return env
}
