package peer

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

func TestPathTimedOut(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("connecting: %w", &rdma.VerbsError{Op: "ibv_modify_qp(RTR)", Device: "rxe0", Errno: syscall.ETIMEDOUT}), true},
		{&rdma.StallError{}, true},
		{&rdma.VerbsError{Op: "ibv_create_qp", Device: "rxe0", Errno: syscall.ENOMEM}, false},
		{errors.New("no device mlx5_9"), false},
	} {
		if got := pathTimedOut(tc.err); got != tc.want {
			t.Errorf("pathTimedOut(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
