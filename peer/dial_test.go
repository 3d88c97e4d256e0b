package peer

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// deadAddr is a loopback port nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestDialControl: the one dial says which responder at which stage,
// and reports the address and step the later requests use.
func TestDialControl(t *testing.T) {
	addr, _ := startServer(t, ServerConfig{Token: "fleet"})
	dead := deadAddr(t)
	for _, tc := range []struct {
		name     string
		cfg      ClientConfig
		stage    Stage         // "" when the dial succeeds
		is       error         // what the error matches besides ErrUnreachable
		wantStep time.Duration // on success
	}{
		{name: "up", cfg: ClientConfig{Addr: addr, Token: "fleet"}, wantStep: ctrl.DefaultTimeout},
		{name: "own step", cfg: ClientConfig{Addr: addr, Token: "fleet", StepTimeout: 3 * time.Second}, wantStep: 3 * time.Second},
		{name: "wrong token", cfg: ClientConfig{Addr: addr, Token: "other"}, stage: StageHandshake, is: ctrl.ErrAuth},
		{name: "no token", cfg: ClientConfig{Addr: addr}, stage: StageHandshake},
		{name: "nothing listening", cfg: ClientConfig{Addr: dead, Token: "fleet", StepTimeout: 2 * time.Second}, stage: StageConnecting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := dialControl(context.Background(), tc.cfg)
			if tc.stage == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer ch.conn.Close()
				if ch.addr != tc.cfg.Addr || ch.step != tc.wantStep {
					t.Errorf("dialled %s with step %v, want %s and %v", ch.addr, ch.step, tc.cfg.Addr, tc.wantStep)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Stage != tc.stage || pe.Addr != tc.cfg.Addr || !errors.Is(err, ErrUnreachable) {
				t.Fatalf("got %v, want an unreachable *Error of %s at %q", err, tc.cfg.Addr, tc.stage)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("got %v, want it to match %v", err, tc.is)
			}
			if ch.conn != nil {
				t.Error("a failed dial returned a channel")
			}
		})
	}
}

// TestDialControlDefaultPort: an address without a port is dialled,
// and named in errors, at ctrl.DefaultPort.
func TestDialControlDefaultPort(t *testing.T) {
	ch, err := dialControl(context.Background(), ClientConfig{Addr: "127.0.0.1", StepTimeout: 2 * time.Second})
	want := "127.0.0.1:" + ctrl.DefaultPort
	var pe *Error
	switch {
	case err == nil:
		// A responder of this host's answered on the default port.
		ch.conn.Close()
		if ch.addr != want {
			t.Errorf("dialled %s, want %s", ch.addr, want)
		}
	case !errors.As(err, &pe) || pe.Addr != want:
		t.Errorf("got %v, want an *Error naming %s", err, want)
	}
}

// TestCallersShareTheDial: a relayed test and a doctor request fail
// before the responder accepts them exactly as the dial does, so a
// caller tells the environment from the fabric the same way for each.
func TestCallersShareTheDial(t *testing.T) {
	addr, _ := startServer(t, ServerConfig{Token: "fleet"})
	spec, err := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Iterations: 10}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	callers := map[string]func(ClientConfig) error{
		"relay": func(cfg ClientConfig) error {
			_, err := RunVia(context.Background(), cfg, Remote{Addr: "127.0.0.1:1"}, spec)
			return err
		},
		"doctor": func(cfg ClientConfig) error {
			_, err := Doctor(context.Background(), cfg, "", 0)
			return err
		},
	}
	for name, call := range callers {
		for _, cfg := range []ClientConfig{
			{Addr: addr, Token: "other"},
			{Addr: deadAddr(t), Token: "fleet", StepTimeout: 2 * time.Second},
		} {
			_, want := dialControl(context.Background(), cfg)
			got := call(cfg)
			if got == nil || want == nil || got.Error() != want.Error() {
				t.Errorf("%s to %s with token %q: %v, want the dial's %v", name, cfg.Addr, cfg.Token, got, want)
			}
			if !errors.Is(got, ErrUnreachable) || !strings.HasPrefix(got.Error(), "responder "+cfg.Addr+", ") {
				t.Errorf("%s: %v, want an unreachable responder %s", name, got, cfg.Addr)
			}
		}
	}
}
