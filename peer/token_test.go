package peer

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
)

// TestSetToken: after SetToken, new connections must prove the new token
// and the old one is refused; no token cannot replace a token.
func TestSetToken(t *testing.T) {
	srv, err := NewServer(ServerConfig{Token: "old", StepTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	handshake := func(token string) error {
		hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer hcancel()
		nc, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c, err := ctrl.Client(hctx, nc, token)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := handshake("old"); err != nil {
		t.Fatalf("the first token: %v", err)
	}
	if err := srv.SetToken("new"); err != nil {
		t.Fatal(err)
	}
	if err := handshake("new"); err != nil {
		t.Errorf("the new token: %v", err)
	}
	if err := handshake("old"); err == nil {
		t.Error("the old token still accepted after SetToken")
	}
	if err := srv.SetToken(""); err == nil {
		t.Error("SetToken(\"\") accepted: it would turn authentication off")
	}
	if err := handshake("new"); err != nil {
		t.Errorf("the new token after a refused SetToken: %v", err)
	}
}
