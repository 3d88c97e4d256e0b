// Package portstats records what an RDMA port's sysfs counters and the
// process's CPU time did across a test case, so a result can show whether
// the fabric retried, dropped or paced the traffic it measured, and what
// each operation cost the host.
package portstats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Root is where the kernel lists RDMA devices.
const Root = "/sys/class/infiniband"

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
	// counters they do not implement) or did not hold a decimal number.
	// Reporting them keeps a missing counter from looking like a zero.
	Skipped []string
}

// Snapshot reads every regular file in root/device/ports/port/counters and
// root/device/ports/port/hw_counters. An empty root means Root. A missing
// counters/ or hw_counters/ directory is not an error, since rxe has no
// counters/; a missing port directory is.
func Snapshot(root, device string, port int) (Counters, error) {
	if root == "" {
		root = Root
	}
	return snapshot(os.DirFS(root), root, device, port)
}

// snapshot reads through fsys so tests can inject the read errors that only
// real drivers produce; root is used only to name paths in errors.
func snapshot(fsys fs.FS, root, device string, port int) (Counters, error) {
	if device == "" || strings.Contains(device, "/") || !fs.ValidPath(device) {
		return Counters{}, fmt.Errorf("portstats: invalid device name %q", device)
	}
	if port < 0 {
		return Counters{}, fmt.Errorf("portstats: invalid port %d for device %s", port, device)
	}
	portDir := path.Join(device, "ports", strconv.Itoa(port))
	shown := filepath.Join(root, filepath.FromSlash(portDir))
	fi, err := fs.Stat(fsys, portDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Counters{}, fmt.Errorf("portstats: %s: %w; run `rdmarun devices` to list RDMA devices and their ports", shown, fs.ErrNotExist)
	case err != nil:
		return Counters{}, fmt.Errorf("portstats: %s: %w", shown, cause(err))
	case !fi.IsDir():
		return Counters{}, fmt.Errorf("portstats: %s is not a directory; run `rdmarun devices` to list RDMA devices and their ports", shown)
	}

	c := Counters{
		Device:     device,
		Port:       port,
		Time:       time.Now(),
		Counters:   map[string]uint64{},
		HWCounters: map[string]uint64{},
	}
	for _, group := range []struct {
		dir string
		m   map[string]uint64
	}{{"counters", c.Counters}, {"hw_counters", c.HWCounters}} {
		dir := path.Join(portDir, group.dir)
		entries, err := fs.ReadDir(fsys, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Counters{}, fmt.Errorf("portstats: %s: %w", filepath.Join(shown, group.dir), cause(err))
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
			if err != nil {
				c.Skipped = append(c.Skipped, group.dir+"/"+e.Name())
				continue
			}
			v, err := parseValue(string(b))
			if err != nil {
				c.Skipped = append(c.Skipped, group.dir+"/"+e.Name())
				continue
			}
			group.m[e.Name()] = v
		}
	}
	slices.Sort(c.Skipped)
	return c, nil
}

// parseValue reads one sysfs counter file: a decimal number, usually
// followed by a newline.
func parseValue(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty counter file")
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		// ParseUint returns the maximum on overflow; a clamped counter
		// would produce a bogus delta, so report nothing instead.
		return 0, err
	}
	return v, nil
}

// cause drops the fs.PathError wrapper, whose path is relative to the
// fs.FS root and so would mislead next to the full path we print.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
