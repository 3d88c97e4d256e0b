package doctorcollector

import "testing"

func TestEnvFor(t *testing.T) {
	for _, tc := range []struct{ root, sys string }{
		{"/sys/class/infiniband", "/sys"},
		{"/sys/class/infiniband/", "/sys"},
		// A container with the host's sysfs under /host.
		{"/host/sys/class/infiniband", "/host/sys"},
		{"/mnt/hostsys/class/infiniband", "/mnt/hostsys"},
		// Not a class directory: the doctor cannot find sysfs from it.
		{"testdata/sysfs", "/sys"},
		{"/srv/infiniband", "/sys"},
	} {
		got := EnvFor(tc.root)
		// The process's own /proc and /dev, whatever the sysfs.
		if got.Sys != tc.sys || got.Proc != "/proc" || got.Dev != "/dev" {
			t.Errorf("EnvFor(%q) = %s %s %s, want %s /proc /dev", tc.root, got.Sys, got.Proc, got.Dev, tc.sys)
		}
	}
}
