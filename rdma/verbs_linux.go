//go:build linux && cgo && !nordma

package rdma

/*
#cgo pkg-config: libibverbs
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -lpthread
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"syscall"
)

func verbsErr(op, dev string, err error) error {
	// A provider library may fail a call without setting errno (libsiw
	// does); Errno 0 says so rather than inventing a kernel answer.
	var errno syscall.Errno
	errors.As(err, &errno)
	return &VerbsError{Op: op, Device: dev, Errno: errno}
}

func rcErr(op, dev string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	if rc < 0 {
		rc = -rc
	}
	return &VerbsError{Op: op, Device: dev, Errno: syscall.Errno(rc)}
}
