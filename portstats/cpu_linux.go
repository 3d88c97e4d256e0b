//go:build linux

package portstats

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// CPUTime returns the user and system CPU time the process has used so far.
func CPUTime() (user, sys time.Duration, err error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, fmt.Errorf("portstats: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), nil
}
