package ethtool

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// lo has no bus device and its driver no driver info, so the kernel has
// no name to give: the answer is ErrNoDriver, not an empty name. A kernel
// that does name it must name something.
func TestDriverLoopback(t *testing.T) {
	got, err := Driver("lo")
	switch {
	case err == nil && got == "":
		t.Error(`Driver(lo) = "" without an error`)
	case err != nil && !(errors.Is(err, ErrNoDriver) && errors.Is(err, unix.EOPNOTSUPP)):
		t.Errorf("Driver(lo): %v, want ErrNoDriver wrapping EOPNOTSUPP", err)
	}
	t.Logf("Driver(lo) = %q, %v", got, err)
}

// netdevDrivers are bus drivers whose netdevs belong to another driver,
// which names itself: the kernel asks the netdev's driver first and
// names the bus device's driver only when it has no answer.
var netdevDrivers = map[string]string{"mlx4_core": "mlx4_en"}

// Every netdev of the host that sysfs names a bus driver for reports the
// same driver through the ioctl; the ioctl is what answers for the
// netdevs that have no such link (veth, under soft-RoCE).
func TestDriverMatchesSysfs(t *testing.T) {
	links, err := filepath.Glob("/sys/class/net/*/device/driver")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, link := range links {
		target, err := os.Readlink(link)
		if err != nil {
			continue
		}
		netdev := filepath.Base(filepath.Dir(filepath.Dir(link)))
		want := filepath.Base(target)
		if own, ok := netdevDrivers[want]; ok {
			want = own
		}
		got, err := Driver(netdev)
		if err != nil || got != want {
			t.Errorf("Driver(%s) = %q, %v; want %s, from its sysfs driver link", netdev, got, err, want)
		}
		t.Logf("%s: %s", netdev, got)
		checked++
	}
	if checked == 0 {
		t.Skip("no netdev in /sys/class/net has a readable device/driver link to compare with")
	}
}

func TestDriverErrors(t *testing.T) {
	if _, err := Driver("rdmarun-none0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("Driver of a missing netdev: %v, want ENODEV", err)
	}
	for _, name := range []string{"", "a-name-longer-than-ifnamsiz"} {
		if _, err := Driver(name); err == nil {
			t.Errorf("Driver(%q) succeeded, want an invalid-name error", name)
		}
	}
}
