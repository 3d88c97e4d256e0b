// Package portstats records what an RDMA port's sysfs counters and the
// process's CPU time did across a test case, so a result can show whether
// the fabric retried, dropped or paced the traffic it measured, and what
// each operation cost the host. The counters are read through sysfs.
package portstats

import (
	"fmt"
	"slices"
	"time"

	"github.com/rdmarun/rdmarun/sysfs"
)

// Counters is one reading of a port's counters/ and hw_counters/ files.
type Counters struct {
	Device string
	Port   int
	// Time is taken when reading starts. It carries Go's monotonic clock
	// reading, so Sub between two snapshots is immune to wall-clock steps.
	Time time.Time
	// Counters holds counters/, the InfiniBand PMA port counters. Each file
	// costs the kernel a MAD to the device, so values are never cached.
	// soft-RoCE (rxe) has no counters/ directory and leaves this empty.
	Counters map[string]uint64
	// HWCounters holds hw_counters/, the driver's own statistics. The
	// kernel caches them for hw_counters/lifespan milliseconds (10 by
	// default), so a snapshot taken sooner than that after the previous one
	// may repeat its values.
	HWCounters map[string]uint64
	// Skipped lists, as "counters/NAME" or "hw_counters/NAME", the files
	// that could not be read (some drivers answer EINVAL or EOPNOTSUPP for
	// counters they do not implement) or did not hold a decimal number;
	// "counters" or "hw_counters" when a whole directory could not be
	// listed. Reporting them keeps a missing counter from looking like a
	// zero.
	Skipped []string
}

// Snapshot reads the counters of one port under root, the directory
// listing the devices; an empty root means sysfs.Root. A missing port is
// an error; a file that cannot be read is listed in Skipped.
func Snapshot(root, device string, port int) (Counters, error) {
	if root == "" {
		root = sysfs.Root
	}
	start := time.Now()
	p, err := sysfs.ReadPort(root, device, port, sysfs.Counters)
	if err != nil {
		return Counters{}, fmt.Errorf("portstats: %w", err)
	}
	c := Counters{
		Device:     device,
		Port:       port,
		Time:       start,
		Counters:   p.Counters,
		HWCounters: p.HWCounters,
	}
	for _, e := range p.Errors {
		c.Skipped = append(c.Skipped, e.Path)
	}
	slices.Sort(c.Skipped)
	return c, nil
}
