package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// limit is one row of /proc/PID/limits; -1 is unlimited.
type limit struct {
	soft, hard int64
	unit       string
}

// parseLimits reads /proc/PID/limits: a header, then one row per limit of
// a name of several words, the soft and hard values and, for most, a
// unit. The kernel pads the columns; fields are what is stable.
func parseLimits(s string) (map[string]limit, error) {
	out := map[string]limit{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || (len(f) >= 1 && f[0] == "Limit") {
			continue
		}
		unit := ""
		if _, err := limitValue(f[len(f)-1]); err != nil {
			unit = f[len(f)-1]
			f = f[:len(f)-1]
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("limits row %q: want a name, a soft and a hard value", line)
		}
		soft, err1 := limitValue(f[len(f)-2])
		hard, err2 := limitValue(f[len(f)-1])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("limits row %q: %w", line, err)
		}
		out[strings.Join(f[:len(f)-2], " ")] = limit{soft: soft, hard: hard, unit: unit}
	}
	if len(out) == 0 {
		return nil, errors.New("no limits listed")
	}
	return out, nil
}

func limitValue(s string) (int64, error) {
	if s == "unlimited" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is neither a number nor unlimited", s)
	}
	return v, nil
}

// memlockNeed is what the default test locks: `rdmarun bench` runs both
// ends of a loopback pair in one process, each registering the default
// bandwidth test's buffer. Queues and completion queues lock more on top,
// so a limit at exactly this figure can still be too small; it is the
// least that cannot work below it.
func memlockNeed() int64 {
	t, err := rdma.TestSpec{Measure: rdma.MeasureBandwidth}.Complete()
	if err != nil {
		// The zero spec always completes; a change that broke it would
		// fail this package's tests.
		panic("doctor: the default bandwidth test does not complete: " + err.Error())
	}
	return 2 * rdma.SpecConfig(t, rdma.EndpointConfig{}).RegisteredBytes()
}

func checkMemlock(env Env) Check {
	c := Check{Name: "limits.memlock", Fix: "raise it: `ulimit -l unlimited` in the shell, LimitMEMLOCK=infinity in a systemd unit, or memlock in /etc/security/limits.conf"}
	need := memlockNeed()
	c.Expected = fmt.Sprintf("at least %s (the default bandwidth test's buffers on both ends of a loopback), or unlimited", bytesText(need))
	s, err := read(env.Proc, "self", "limits")
	if err != nil {
		c.Status, c.Found = CannotTell, "cannot read "+filepath.Join(env.Proc, "self", "limits")+": "+why(err)
		return c
	}
	limits, err := parseLimits(s)
	if err != nil {
		c.Status, c.Found = CannotTell, err.Error()
		return c
	}
	l, ok := limits["Max locked memory"]
	if !ok {
		c.Status, c.Found = CannotTell, "no \"Max locked memory\" row in limits"
		return c
	}
	if l.soft < 0 {
		c.Status, c.Found, c.Fix = OK, "unlimited", ""
		return c
	}
	c.Found = bytesText(l.soft)
	if l.soft < need {
		c.Status = Fail
		c.Cost = "registering memory fails (ENOMEM): tests do not start"
		return c
	}
	c.Status, c.Fix = OK, ""
	return c
}

// checkUverbs: the verbs library opens /dev/infiniband/uverbsN for
// reading and writing; a device node the user cannot open shows as "no
// device" to every verbs program.
func checkUverbs(env Env, dev string) Check {
	c := Check{Name: "device.uverbs", Device: dev, Expected: "/dev/infiniband/uverbsN of the device, readable and writable"}
	node, err := uverbsOf(env.Sys, dev)
	if err != nil {
		c.Status, c.Found = Fail, err.Error()
		c.Cost = "verbs programs do not see the device"
		c.Fix = "load ib_uverbs (modprobe ib_uverbs)"
		return c
	}
	// Named as on the host: env.Dev may be a saved copy.
	c.Expected = "/dev/infiniband/" + node + ", readable and writable"
	f, err := os.OpenFile(filepath.Join(env.Dev, "infiniband", node), os.O_RDWR, 0)
	switch {
	case err == nil:
		f.Close()
		c.Status, c.Found = OK, "opens for reading and writing"
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Found = Fail, "missing"
		c.Cost = "verbs programs do not see the device"
		c.Fix = "check udev (rdma-core installs its rules) or, in a container, pass /dev/infiniband through"
	default:
		c.Status, c.Found = Fail, why(err)
		c.Cost = "verbs programs do not see the device"
		c.Fix = "give the user access (the rdma group, or udev rule MODE=\"0666\")"
	}
	return c
}

// uverbsOf finds the uverbs node of an RDMA device from the
// infiniband_verbs class, whose entries name their device in ibdev.
func uverbsOf(sys, dev string) (string, error) {
	dir := filepath.Join(sys, "class", "infiniband_verbs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("no verbs interface: %s", why(err))
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "uverbs") {
			continue
		}
		if name, err := read(dir, e.Name(), "ibdev"); err == nil && name == dev {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("no uverbs node names %s in %s", dev, dir)
}

// bytesText is a size in binary units, as limits are usually set.
func bytesText(b int64) string { return units.FormatBytes(uint64(max(b, 0))) }
