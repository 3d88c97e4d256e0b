package peer

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/doctor/doctortest"
	"github.com/rdmarun/rdmarun/internal/testcert"
)

// startDoctorServer serves doctor requests from a saved host's files.
func startDoctorServer(t *testing.T, cfg ServerConfig, fixture string) string {
	t.Helper()
	return startDoctorServerTLS(t, cfg, fixture, nil)
}

func startDoctorServerTLS(t *testing.T, cfg ServerConfig, fixture string, tlsCfg *tls.Config) string {
	t.Helper()
	env := doctortest.SavedHost(t, "../doctor/testdata/"+fixture)
	cfg.DoctorEnv = func() doctor.Env { return env }
	addr, _ := serve(t, "127.0.0.1", cfg, tlsCfg)
	return addr
}

// The far end answers with the same report its own `rdmarun doctor`
// gives, and the MTUs mtu.peer compares.
func TestDoctorRequest(t *testing.T) {
	addr := startDoctorServer(t, ServerConfig{Token: "fleet"}, "broken")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	far, err := Doctor(ctx, ClientConfig{Addr: addr, Token: "fleet"}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	env := doctortest.SavedHost(t, "../doctor/testdata/broken")
	env.Port = 1
	want, _ := json.Marshal(doctor.Run(env))
	got, _ := json.Marshal(far.Report)
	if !bytes.Equal(got, want) {
		t.Errorf("the far end's report:\n%s\nwant its own:\n%s", got, want)
	}
	if !far.Report.Failed() {
		t.Error("the broken host's report does not read as failed on this end")
	}
	wantMTU := doctor.PortMTU{Device: "mlx5_0", Port: 1, Netdev: "ens1f0np0", NetdevMTU: 1500, ActiveMTU: 4096}
	if len(far.MTUs) != 1 || far.MTUs[0] != wantMTU {
		t.Errorf("the far end's MTUs: %+v, want [%+v]", far.MTUs, wantMTU)
	}
	if far.Addr != addr {
		t.Errorf("Addr %q, want %q", far.Addr, addr)
	}

	_, err = Doctor(ctx, ClientConfig{Addr: addr, Token: "fleet"}, "mlx5_9", 0)
	var re *ctrl.RemoteError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "no RDMA device mlx5_9 on this responder") {
		t.Errorf("an unknown device: %v, want the responder's error naming it", err)
	}

	_, err = Doctor(ctx, ClientConfig{Addr: addr, Token: "other"}, "", 0)
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("a wrong token: %v, want an unreachable responder refusing authentication", err)
	}
}

// Over TLS the request goes as a test does: the client must trust the
// responder's certificate, and the token still counts.
func TestDoctorTLS(t *testing.T) {
	cert, key := testcert.Write(t, "127.0.0.1")
	srvTLS, err := ctrl.TLSConfig{CertFile: cert, KeyFile: key}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cliTLS, err := ctrl.TLSConfig{CAFile: cert}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	addr := startDoctorServerTLS(t, ServerConfig{Token: "fleet"}, "mlx5-roce", srvTLS)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	far, err := Doctor(ctx, ClientConfig{Addr: addr, Token: "fleet", TLS: cliTLS}, "", 0)
	if err != nil || len(far.Report.Devices) != 1 {
		t.Fatalf("over TLS: %v", err)
	}
	if _, err := Doctor(ctx, ClientConfig{Addr: addr, Token: "fleet"}, "", 0); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a plain client to a TLS responder: %v, want it refused before the request", err)
	}
	if _, err := Doctor(ctx, ClientConfig{Addr: addr, TLS: cliTLS}, "", 0); !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("TLS without the token: %v, want the token refused", err)
	}
}

// fakeResponder accepts one connection, does the handshake, reads the
// request and then does what answer says.
func fakeResponder(t *testing.T, answer func(context.Context, *ctrl.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := ctrl.Server(ctx, nc, "")
		if err != nil {
			nc.Close()
			return
		}
		defer c.Close()
		if _, _, err := c.RecvAny(ctx); err != nil {
			t.Errorf("the fake responder's request: %v", err)
			return
		}
		answer(ctx, c)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// A responder of a release before the request says so, and the client
// says to upgrade it; one that hangs up or says nothing ends the request
// within its step, never with a hang.
func TestDoctorOlderResponder(t *testing.T) {
	older, err := os.ReadFile("testdata/doctor-older-responder.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		answer func(context.Context, *ctrl.Conn)
		want   string
	}{
		{"with the relay kinds", func(ctx context.Context, c *ctrl.Conn) { _ = c.SendError(ctx, string(older)) },
			"is older than the doctor request; upgrade it"},
		{"before them", func(context.Context, *ctrl.Conn) {},
			"closed the connection on the doctor request, as a release older than the request does; upgrade it"},
		{"silent", func(ctx context.Context, c *ctrl.Conn) { _, _, _ = c.RecvAny(ctx) }, // until the client gives up
			"went silent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeResponder(t, tc.answer)
			// The step (500 ms, so at most 3 s for the answer) must
			// end the wait, long before ctx.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			_, err := Doctor(ctx, ClientConfig{Addr: addr, StepTimeout: 500 * time.Millisecond}, "", 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if took := time.Since(start); took >= 30*time.Second {
				t.Errorf("the error came after %v: the step did not bound the wait", took)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Stage != StageDoctor {
				t.Errorf("%v: want an *Error at stage %q", err, StageDoctor)
			}
		})
	}
}

// FuzzDoctorReport: whatever a far end sends as its report decodes or
// fails cleanly, and what decodes survives a round trip unchanged.
func FuzzDoctorReport(f *testing.F) {
	for _, name := range []string{"broken", "mlx5-roce", "mlx5-ib", "bnxt-roce"} {
		b, err := os.ReadFile("../doctor/testdata/" + name + ".golden.json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(`{"report":` + string(b) + `,"mtus":[{"device":"mlx5_0","port":1,"netdev":"eth0","netdev_mtu":9000,"active_mtu":4096}]}`))
	}
	f.Add([]byte(`{"report":{"checks":[{"check":"a.b","status":"newer"}]}}`))
	f.Add([]byte(`{"report":{"checks":[{"status":3}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m doctorReportMsg
		if json.Unmarshal(b, &m) != nil {
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("a decoded report does not encode: %v", err)
		}
		var m2 doctorReportMsg
		if err := json.Unmarshal(again, &m2); err != nil {
			t.Fatalf("the re-encoded report does not decode: %v\n%s", err, again)
		}
		if third, _ := json.Marshal(m2); !bytes.Equal(third, again) {
			t.Fatalf("the round trip changed the report:\n%s\n%s", again, third)
		}
	})
}
