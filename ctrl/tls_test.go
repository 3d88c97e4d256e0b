package ctrl

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/testcert"
)

type certFiles struct{ cert, key string }

// selfSigned makes a self-signed certificate for 127.0.0.1 and localhost,
// and its key, as PEM files. Being its own CA, the certificate is also the
// CAFile that trusts it.
func selfSigned(t *testing.T) certFiles {
	t.Helper()
	cert, key := testcert.Write(t, "127.0.0.1", "localhost")
	return certFiles{cert, key}
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsPair listens with server TLS (nil: plain), dials with client TLS and
// runs both handshakes with a token. A failed Dial is the client's error.
func tlsPair(t *testing.T, server, client *TLSConfig) (c, s *Conn, cerr, serr error) {
	t.Helper()
	var scfg, ccfg *tls.Config
	var err error
	if server != nil {
		if scfg, err = server.ServerConfig(); err != nil {
			t.Fatal(err)
		}
	}
	if client != nil {
		if ccfg, err = client.ClientConfig(); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := Listen("127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan end, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- end{nil, err}
			return
		}
		c := NewConn(nc, Options{Timeout: 2 * time.Second})
		done <- end{c, c.ServerHandshake(context.Background(), "s3cret")}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	nc, cerr := Dial(ctx, ln.Addr().String(), ccfg)
	if cerr == nil {
		c = NewConn(nc, Options{Timeout: 2 * time.Second})
		if cerr = c.ClientHandshake(ctx, "s3cret"); cerr != nil {
			c = nil
		}
	}
	se := <-done
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	if se.err == nil {
		t.Cleanup(func() { se.c.Close() })
	}
	return c, se.c, cerr, se.err
}

func TestTLS(t *testing.T) {
	srv, cli := selfSigned(t), selfSigned(t)
	serverTLS := &TLSConfig{CertFile: srv.cert, KeyFile: srv.key}
	mutualTLS := &TLSConfig{CertFile: srv.cert, KeyFile: srv.key, CAFile: cli.cert}
	for _, tc := range []struct {
		name           string
		server, client *TLSConfig
		cerr, serr     []string // nil: no error
	}{
		{name: "server certificate", server: serverTLS, client: &TLSConfig{CAFile: srv.cert}},
		{name: "by name", server: serverTLS, client: &TLSConfig{CAFile: srv.cert, ServerName: "localhost"}},
		{name: "mutual", server: mutualTLS, client: &TLSConfig{CAFile: srv.cert, CertFile: cli.cert, KeyFile: cli.key}},
		{name: "insecure", server: serverTLS, client: &TLSConfig{InsecureSkipVerify: true}},
		{name: "unknown CA", server: serverTLS, client: &TLSConfig{},
			cerr: []string{"ctrl: TLS: the certificate of 127.0.0.1:", "does not verify (set CAFile to the CA that signed it", "unknown authority"},
			serr: []string{"refused this responder's certificate (the client needs the CA that signed it as CAFile"}},
		{name: "wrong name", server: serverTLS, client: &TLSConfig{CAFile: srv.cert, ServerName: "rdma-7.example"},
			cerr: []string{"does not verify", "rdma-7.example"}, serr: []string{"refused this responder's certificate"}},
		{name: "client without certificate", server: mutualTLS, client: &TLSConfig{CAFile: srv.cert},
			cerr: []string{"ended TLS with an alert while waiting for hello", "certificate required"},
			serr: []string{"sent no certificate, and this responder requires one signed by its CAFile"}},
		{name: "client certificate from another CA", server: mutualTLS,
			client: &TLSConfig{CAFile: srv.cert, CertFile: srv.cert, KeyFile: srv.key},
			cerr:   []string{"ended TLS with an alert"},
			serr:   []string{"ctrl: TLS: the certificate of client 127.0.0.1:", "does not verify against this responder's CAFile"}},
		{name: "TLS client, plain responder", client: &TLSConfig{CAFile: srv.cert},
			cerr: []string{"answered in plain text: it does not use TLS; enable TLS there or disable it here"},
			serr: []string{"it is the start of a TLS handshake, so the peer uses TLS and this end does not"}},
		{name: "plain client, TLS responder", server: serverTLS,
			cerr: []string{"reported: this responder requires TLS and the client connected without it; enable TLS on the client"},
			serr: []string{"connected without TLS but this responder requires it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s, cerr, serr := tlsPair(t, tc.server, tc.client)
			for _, e := range []struct {
				who  string
				err  error
				want []string
			}{{"client", cerr, tc.cerr}, {"server", serr, tc.serr}} {
				if e.want == nil {
					if e.err != nil {
						t.Errorf("%s: %v", e.who, e.err)
					}
					continue
				}
				wantErr(t, e.err, e.want...)
			}
			if tc.cerr == nil && tc.serr == nil {
				if _, ok := c.NetConn().(*tls.Conn); !ok && tc.server != nil {
					t.Errorf("client conn is %T, want *tls.Conn", c.NetConn())
				}
				exchange(t, c, s)
			}
		})
	}
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	good := selfSigned(t)
	other := selfSigned(t)
	garbage := filepath.Join(dir, "garbage.pem")
	writeFile(t, garbage, []byte("not PEM\n"))
	unreadable := filepath.Join(dir, "unreadable.pem")
	writeFile(t, unreadable, []byte("x"))
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name   string
		cfg    TLSConfig
		want   []string // substrings of Validate's error
		server string   // of ServerConfig's, if Validate passes
	}{
		{name: "empty", server: "ctrl: a TLS responder needs CertFile and KeyFile"},
		{name: "good", cfg: TLSConfig{CertFile: good.cert, KeyFile: good.key, CAFile: other.cert}},
		{name: "cert without key", cfg: TLSConfig{CertFile: good.cert},
			want: []string{"ctrl: TLS needs CertFile and KeyFile together; one of them is empty"}},
		{name: "missing files", cfg: TLSConfig{CertFile: missing, KeyFile: good.key, CAFile: missing + "2"},
			want: []string{"ctrl: TLS CertFile " + missing + " does not exist", "ctrl: TLS CAFile " + missing + "2 does not exist"}},
		{name: "mismatched pair", cfg: TLSConfig{CertFile: good.cert, KeyFile: other.key},
			want: []string{"ctrl: TLS CertFile " + good.cert + " and KeyFile " + other.key + " are not a certificate and its PEM private key"}},
		{name: "garbage key", cfg: TLSConfig{CertFile: good.cert, KeyFile: garbage},
			want: []string{"are not a certificate and its PEM private key"}},
		{name: "garbage CA", cfg: TLSConfig{CAFile: garbage},
			want: []string{"ctrl: TLS CAFile " + garbage + " holds no PEM certificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				_, err = tc.cfg.ServerConfig()
				if tc.server == "" {
					if err != nil {
						t.Fatal(err)
					}
				} else {
					wantErr(t, err, tc.server)
				}
				return
			}
			wantErr(t, err, tc.want...)
			if _, cerr := tc.cfg.ClientConfig(); cerr == nil {
				t.Errorf("ClientConfig accepted what Validate refused")
			}
		})
	}
	// Root reads anything, so this one is checked only when not root.
	if _, err := os.ReadFile(unreadable); err != nil {
		wantErr(t, TLSConfig{CAFile: unreadable}.Validate(), "ctrl: TLS CAFile "+unreadable+" is not readable by this user")
	}
}

func TestDialErrors(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()

	_, err = Listen(addr, nil)
	wantErr(t, err, "ctrl: cannot listen on "+addr+": the address is in use (another rdmarun serve, or another program, listens there; pick another port)")

	// A TLS client to a listener that never speaks.
	ctx, cancel := context.WithTimeout(context.Background(), short)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, addr, &tls.Config{MinVersion: tls.VersionTLS13})
	if d := time.Since(start); d > short+slack {
		t.Errorf("Dial took %s", d)
	}
	wantErr(t, err, "ctrl: TLS: "+addr+" did not complete the handshake within ", " (does it use TLS?)")
	// The limit named is what was left of the context when Dial began:
	// short, less the moments before the call (148ms once, on a busy CI).
	if m := regexp.MustCompile(`within (\S+) \(`).FindStringSubmatch(err.Error()); m == nil {
		t.Errorf("error %q names no limit", err)
	} else if d, perr := time.ParseDuration(m[1]); perr != nil || d > short || d < short-50*time.Millisecond {
		t.Errorf("error %q names the limit %s, want the context's %v or a little less", err, m[1], short)
	}

	ln.Close()
	_, err = Dial(context.Background(), addr, nil)
	wantErr(t, err, "ctrl: connection to "+addr+" refused: nothing listens there (is rdmarun serve running on that host and port?)")

	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = Dial(cancelled, addr, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a cancelled context: %v", err)
	}
}

// TestQuietOverTLS: Quiet reads through TLS (a plain socket is peeked at
// instead): silence is nil and leaves the stream in step; a message or a
// close ends the session.
func TestQuietOverTLS(t *testing.T) {
	cf := selfSigned(t)
	pair := func(t *testing.T) (c, s *Conn) {
		c, s, cerr, serr := tlsPair(t, &TLSConfig{CertFile: cf.cert, KeyFile: cf.key}, &TLSConfig{CAFile: cf.cert})
		if cerr != nil || serr != nil {
			t.Fatalf("handshakes: client %v, server %v", cerr, serr)
		}
		return c, s
	}
	quietUntil := func(c *Conn) error {
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for err = c.Quiet(); err == nil && time.Now().Before(deadline); err = c.Quiet() {
			time.Sleep(10 * time.Millisecond)
		}
		return err
	}
	t.Run("silent peer", func(t *testing.T) {
		c, s := pair(t)
		for range 3 {
			if err := c.Quiet(); err != nil {
				t.Fatalf("Quiet on a silent TLS connection: %v", err)
			}
		}
		if err := s.Send(context.Background(), KindReady, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Recv(ctx, KindReady, nil); err != nil {
			t.Fatalf("Recv after Quiet: %v", err)
		}
	})
	t.Run("peer spoke unasked", func(t *testing.T) {
		c, s := pair(t)
		if err := s.Send(context.Background(), KindDone, nil); err != nil {
			t.Fatal(err)
		}
		wantErr(t, quietUntil(c), "sent data unasked")
	})
	t.Run("peer closed", func(t *testing.T) {
		c, s := pair(t)
		s.Close()
		if err := quietUntil(c); err == nil {
			t.Fatal("Quiet stayed nil for 5 s after the peer closed")
		}
	})
}
