package ctrl

import (
	"net"
	"strings"
)

// DefaultPort is where a responder (rdmarun serve, and the responder
// inside rdmarun_exporter) listens for the control channel unless told
// otherwise. It is declared here, below the verbs core and the fleet
// planner, so that every package naming it shares this one constant.
const DefaultPort = "18520"

// DefaultCMPort is where rdmarun serve listens for rdma_cm connections
// unless told otherwise: the control port's neighbour. On iWARP it is a
// real TCP port, which a firewall must let through like the control port.
const DefaultCMPort = 18521

// WithDefaultPort returns addr as the host:port to dial, DefaultPort
// standing in for a missing port. A bare IPv6 address takes it too,
// written with or without brackets ("fd00::3", "[fd00::3]"), since a
// hostfile or a flag may give either.
func WithDefaultPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), DefaultPort)
}
