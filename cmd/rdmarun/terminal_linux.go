package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal asks the tty driver for f's settings: only a terminal has
// them. A character device is not enough, as /dev/null is one.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
