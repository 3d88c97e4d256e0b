// Package peertest starts a responder in-process for the tests of
// packages that talk to one (the runner, the doctor command), so each
// does not carry its own copy of the start and the stop.
package peertest

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
)

// Serve starts a responder with cfg on a free loopback port, with TLS
// when tlsCfg is not nil, and returns its address. The test's cleanup
// stops it and fails the test if it did not stop cleanly.
func Serve(t testing.TB, cfg peer.ServerConfig, tlsCfg *tls.Config) string {
	t.Helper()
	srv, err := peer.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ctrl.Listen("127.0.0.1:0", tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}
