//go:build !linux

package portstats

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// CPUTime is only implemented on linux, where RDMA tests run; elsewhere the
// package still builds so that tools reading results compile everywhere.
func CPUTime() (user, sys time.Duration, err error) {
	return 0, 0, fmt.Errorf("portstats: CPU time on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
