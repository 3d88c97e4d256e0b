package peer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/internal/testcert"
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

// A connection that closes before the client says anything (a wait
// loop's connect and close, a tcpSocket probe; a linger-0 one resets) is
// a readiness check, counted apart and logged at debug, plain or over
// TLS; a client that says something and breaks off, or that the
// handshake refuses, is still a failed test.
func TestServerReadinessCheck(t *testing.T) {
	cert, key := testcert.Write(t, "127.0.0.1")
	srvTLS, err := ctrl.TLSConfig{CertFile: cert, KeyFile: key}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	closeQuietly := func(nc net.Conn) error { return nc.Close() }
	reset := func(nc net.Conn) error {
		if err := nc.(*net.TCPConn).SetLinger(0); err != nil {
			return err
		}
		return nc.Close()
	}
	partial := func(nc net.Conn) error {
		if _, err := nc.Write([]byte("RDM")); err != nil {
			return err
		}
		return nc.Close()
	}
	noToken := func(nc net.Conn) error {
		_, err := ctrl.Client(context.Background(), nc, "")
		if err == nil {
			return errors.New("the handshake without the token succeeded")
		}
		return nil
	}
	for _, tc := range []struct {
		name          string
		tls           *tls.Config
		client        func(net.Conn) error
		checks, tests int
	}{
		{"closed", nil, closeQuietly, 1, 0},
		{"reset", nil, reset, 1, 0},
		{"closed TLS", srvTLS, closeQuietly, 1, 0},
		{"reset TLS", srvTLS, reset, 1, 0},
		{"part of a hello", nil, partial, 0, 1},
		{"no token", nil, noToken, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			var mu sync.Mutex
			cfg := ServerConfig{Token: "fleet", Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			addr, srv := serve(t, "127.0.0.1", cfg, tc.tls)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.client(nc); err != nil {
				t.Fatal(err)
			}
			// The server counts a connection, then logs it: wait for both.
			const checkLine = "level=DEBUG msg=\"connection closed before the handshake: a readiness check, not a test\""
			want := checkLine
			if tc.tests > 0 {
				want = "level=WARN"
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				served, _ := srv.Stats()
				mu.Lock()
				logs := strings.Contains(logged.String(), want)
				mu.Unlock()
				if served+srv.Checks() > 0 && logs || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			served, failed := srv.Stats()
			if checks := srv.Checks(); checks != tc.checks || served != tc.tests || failed != tc.tests {
				t.Errorf("checks %d, tests %d (failed %d); want checks %d, tests %d all failed", checks, served, failed, tc.checks, tc.tests)
			}
			mu.Lock()
			log := logged.String()
			mu.Unlock()
			if warned := strings.Contains(log, "level=WARN"); warned != (tc.tests > 0) {
				t.Errorf("log %q: a warning %v, want %v", log, warned, tc.tests > 0)
			}
			if tc.checks > 0 && !strings.Contains(log, checkLine) {
				t.Errorf("log %q lacks the check at debug", log)
			}
		})
	}
}

// lockedWriter lets the test read a log the server's goroutines write.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
