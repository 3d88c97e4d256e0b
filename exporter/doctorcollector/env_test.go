package doctorcollector

import (
	"testing"

	"github.com/rdmarun/rdmarun/doctor"
)

func TestEnvFor(t *testing.T) {
	for _, tc := range []struct {
		root string
		want doctor.Env
	}{
		{"/sys/class/infiniband", doctor.Env{Sys: "/sys", Proc: "/proc", Dev: "/dev"}},
		{"/sys/class/infiniband/", doctor.Env{Sys: "/sys", Proc: "/proc", Dev: "/dev"}},
		// A container with the host's file systems under /host.
		{"/host/sys/class/infiniband", doctor.Env{Sys: "/host/sys", Proc: "/host/proc", Dev: "/host/dev"}},
		// A sysfs not called sys: only /sys moves.
		{"/mnt/hostsys/class/infiniband", doctor.Env{Sys: "/mnt/hostsys", Proc: "/proc", Dev: "/dev"}},
		// Not a class directory: the doctor cannot find sysfs from it.
		{"testdata/sysfs", doctor.Env{Sys: "/sys", Proc: "/proc", Dev: "/dev"}},
	} {
		got := EnvFor(tc.root)
		if got.Sys != tc.want.Sys || got.Proc != tc.want.Proc || got.Dev != tc.want.Dev {
			t.Errorf("EnvFor(%q) = %s %s %s, want %s %s %s", tc.root, got.Sys, got.Proc, got.Dev, tc.want.Sys, tc.want.Proc, tc.want.Dev)
		}
	}
}
