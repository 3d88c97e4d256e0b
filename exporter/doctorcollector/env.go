package doctorcollector

import (
	"path/filepath"

	"github.com/rdmarun/rdmarun/doctor"
)

// EnvFor is the doctor's view of the host whose RDMA devices are at
// sysfsRoot, the exporter's --sysfs.root: the sysfs that holds it (the
// default /sys/class/infiniband is /sys; a container's
// /host/sys/class/infiniband is /host/sys). A root of another shape (a
// fixture) keeps /sys.
//
// /proc and /dev stay the exporter's own, even in a container: the
// doctor reads the locked-memory limit of the process that runs it
// (/proc/self/limits, which a host's /proc mounted elsewhere does not
// resolve for a process outside its namespace) and opens the uverbs
// device nodes to see whether it can, and for the exporter the answer
// that matters is its own, as its probes and responder use them.
// meminfo and the CPUs' frequency files are the host's in a container
// too.
func EnvFor(sysfsRoot string) doctor.Env {
	env := doctor.HostEnv()
	root := filepath.Clean(sysfsRoot)
	class := filepath.Dir(root)
	if filepath.Base(root) == "infiniband" && filepath.Base(class) == "class" {
		env.Sys = filepath.Dir(class)
	}
	return env
}
