package peer

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/rdmarun/rdmarun/ctrl"
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

// The responder's stall in the middle of a test reaches the client as a
// timeout, as one before the test does through ctrl.SendTimeout.
func TestRemoteSideTimeout(t *testing.T) {
	if !errors.Is(&RemoteSideError{Msg: "stalled", Timeout: true}, ctrl.ErrPeerTimeout) {
		t.Error("a remote side's timeout does not match ctrl.ErrPeerTimeout")
	}
	if errors.Is(&RemoteSideError{Msg: "no memory"}, ctrl.ErrPeerTimeout) {
		t.Error("a remote side's other failure matches ctrl.ErrPeerTimeout")
	}
}
