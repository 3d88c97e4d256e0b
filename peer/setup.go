package peer

import (
	"errors"
	"syscall"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// HostSetup reports whether err is a host's own set-up failing rather
// than the fabric: no such device, an op the device cannot do, or memory
// it may not register (the locked-memory limit). It holds for this host's
// failure and for one a responder reported (ctrl.ErrPeerSetup), directly
// or through a relay.
func HostSetup(err error) bool {
	var ve *rdma.VerbsError
	var re *RelayedError
	switch {
	case errors.Is(err, rdma.ErrNoDevice), errors.Is(err, rdma.ErrNotSupported):
		return true
	case errors.As(err, &ve) && ve.Op == "ibv_reg_mr" && ve.Errno == syscall.ENOMEM:
		return true
	case errors.Is(err, ctrl.ErrPeerSetup):
		return true
	case errors.As(err, &re):
		return re.Setup != SetupNone
	}
	return false
}

// Environmental reports whether err says the environment failed, not the
// fabric: a host's own set-up (HostSetup), or a responder that cannot be
// reached or refuses this client.
func Environmental(err error) bool {
	return errors.Is(err, ErrUnreachable) || HostSetup(err)
}

// Where a relayed test's set-up failed (RelayedError.Setup).
const (
	SetupNone  = ""
	SetupRelay = "relay" // A's own host
	SetupPeer  = "peer"  // B's host, as B reported it to A
)

// setupOf says whose host set-up err is, from the host that met it: its
// own, or the peer's when the peer said so.
func setupOf(err error) string {
	switch {
	case errors.Is(err, ctrl.ErrPeerSetup):
		return SetupPeer
	case HostSetup(err):
		return SetupRelay
	}
	return SetupNone
}
