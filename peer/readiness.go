package peer

import (
	"errors"
	"io"
	"syscall"
)

// Checks reports how many connections closed before the client said
// anything: TCP readiness checks (a wait loop's connect and close, a
// Kubernetes tcpSocket probe), which Stats does not count as tests.
func (s *Server) Checks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checks
}

// readinessCheck tells a connection that closed before the client said
// anything from a test that failed. ctrl reports a close as io.EOF only
// when no byte of a frame came (a close inside one is
// io.ErrUnexpectedEOF), and TLS likewise before the first record; the
// handshake's first step waits for the client's first bytes. A reset
// there is a probe that closes with SO_LINGER 0. A client that gave up
// silently at a later step of the handshake, or crashed inside its
// hello, looks the same, and has not begun a test either; a client the
// handshake refuses (token, version, TLS) is a failure, not a check.
func readinessCheck(err error) bool {
	return errors.Is(err, errHandshake) && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET))
}
