//go:build !unix

package runner

import "errors"

// readOpenFileLimit has no RLIMIT_NOFILE to read here: nothing is checked.
func readOpenFileLimit() (uint64, error) {
	return 0, errors.ErrUnsupported
}
