package ctrl

import (
	"errors"
	"fmt"
	"net"
)

// ErrUnauthenticated is matched (errors.Is) by the error of
// CheckAuthenticated: a responder would hand rkeys to anyone who reaches
// it. Callers add how to fix it in their own terms (a flag, a config key).
var ErrUnauthenticated = errors.New("no token and no client certificates")

// Loopback reports whether a listen address accepts connections from this
// host only. An empty host listens on every interface. A host name other
// than localhost counts as reachable from the network: what it resolves
// to can change after the check.
func Loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAuthenticated refuses a responder that would listen on a network
// address with nothing to tell its clients apart: no token, and no
// client certificates required. Every test it answers registers memory
// and sends its rkey, so such a responder lets anyone who reaches it read
// and write that memory.
func CheckAuthenticated(listen, token string, tlsCfg TLSConfig) error {
	if token != "" || tlsCfg.CAFile != "" || Loopback(listen) {
		return nil
	}
	return fmt.Errorf("a responder on %s is reachable from the network and has %w, so anyone who connects gets rkeys to this host's registered memory", listen, ErrUnauthenticated)
}
