package ctrl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

type end struct {
	c   *Conn
	err error
}

// connect joins a client and a server conn over transport: "pipe" or "tcp"
// (127.0.0.1 only).
func connect(t *testing.T, transport string) (client, server net.Conn) {
	t.Helper()
	switch transport {
	case "pipe":
		client, server = net.Pipe()
	case "tcp":
		ln, err := Listen("127.0.0.1:0", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			nc, _ := ln.Accept()
			accepted <- nc
		}()
		client, err = Dial(context.Background(), ln.Addr().String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		server = <-accepted
		if server == nil {
			t.Fatal("accept failed")
		}
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// handshake runs both sides at once, as two machines would.
func handshake(cnc, snc net.Conn, co, so Options, ctok, stok string) (client, server end) {
	ctx := context.Background()
	done := make(chan end, 1)
	go func() {
		c := NewConn(snc, so)
		done <- end{c, c.ServerHandshake(ctx, stok)}
	}()
	c := NewConn(cnc, co)
	client = end{c, c.ClientHandshake(ctx, ctok)}
	return client, <-done
}

func TestHandshake(t *testing.T) {
	older, newer := Options{version: Version, Software: "rdmarun v1.0.0"}, Options{version: Version + 1, Software: "rdmarun v2.0.0"}
	for _, tc := range []struct {
		name       string
		co, so     Options
		ctok, stok string
		client     []string // substrings of the client's error; nil: no error
		server     []string
		is         error // both errors wrap it
	}{
		{name: "no token"},
		{name: "same token", ctok: "s3cret", stok: "s3cret"},
		{name: "wrong token", ctok: "guess", stok: "s3cret", is: ErrAuth,
			client: []string{"reported: authentication failed: the client's token is not the responder's"},
			server: []string{"failed authentication: its token is not this responder's"}},
		{name: "token on the responder only", stok: "s3cret", is: ErrAuth,
			client: []string{"reported: authentication failed: the responder requires a token and the client has none"},
			server: []string{"has no token but this responder requires one"}},
		{name: "token on the client only", ctok: "s3cret", is: ErrAuth,
			client: []string{"reported: the responder has no token but the client has one; give both ends the same token, or neither"},
			server: []string{"has a token but this responder has none"}},
		{name: "newer client", co: newer, so: older, ctok: "s3cret", stok: "s3cret", is: ErrVersion,
			client: []string{"speaks control protocol version 1, this end speaks 2; both ends need the same rdmarun release line",
				"the peer said: the responder speaks control protocol version 1 (rdmarun v1.0.0))"},
			server: []string{"speaks control protocol version 2, this end speaks 1; both ends need the same rdmarun release line (the peer runs rdmarun v2.0.0)"}},
		{name: "newer responder", co: older, so: newer, is: ErrVersion,
			client: []string{"ctrl: waiting for hello: frame from", "speaks control protocol version 2, this end speaks 1"},
			server: []string{"ctrl: waiting for hello: frame from", "speaks control protocol version 1, this end speaks 2"}},
	} {
		for _, transport := range []string{"pipe", "tcp"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				cnc, snc := connect(t, transport)
				client, server := handshake(cnc, snc, tc.co, tc.so, tc.ctok, tc.stok)
				for _, e := range []struct {
					who  string
					err  error
					want []string
				}{{"client", client.err, tc.client}, {"server", server.err, tc.server}} {
					if e.want == nil {
						if e.err != nil {
							t.Errorf("%s: %v", e.who, e.err)
						}
						continue
					}
					wantErr(t, e.err, e.want...)
					if !errors.Is(e.err, tc.is) {
						t.Errorf("%s: errors.Is(%v, %v) is false", e.who, e.err, tc.is)
					}
				}
				if client.err == nil && server.err == nil {
					exchange(t, client.c, server.c)
				}
			})
		}
	}
}

// exchange checks a handshaken pair carries a test's messages both ways.
func exchange(t *testing.T, client, server *Conn) {
	t.Helper()
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		var s spec
		err := server.Recv(ctx, KindSpec, &s)
		if err == nil {
			err = server.Send(ctx, KindSpecOK, s)
		}
		errc <- err
	}()
	if err := client.Send(ctx, KindSpec, spec{"write", 7}); err != nil {
		t.Fatal(err)
	}
	var back spec
	if err := client.Recv(ctx, KindSpecOK, &back); err != nil || back != (spec{"write", 7}) {
		t.Errorf("client got %+v, %v", back, err)
	}
	if err := <-errc; err != nil {
		t.Errorf("server: %v", err)
	}
}

// fakeResponder plays a responder that does not know the token: it claims
// one, takes the client's proof and answers with a made-up one.
func TestHandshakeImpostorResponder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nonce []byte
		proof func(a authMsg, nonce []byte) []byte
		want  string
	}{
		{name: "accepts anyone", nonce: bytes.Repeat([]byte{1}, nonceSize),
			proof: func(authMsg, []byte) []byte { return make([]byte, 32) },
			want:  "could not prove it knows the token"},
		{name: "other token", nonce: bytes.Repeat([]byte{2}, nonceSize),
			proof: func(a authMsg, nonce []byte) []byte { return mac("other", a.Nonce, nonce) },
			want:  "could not prove it knows the token"},
		// Reflecting the client's own MAC back fails: the orders differ.
		{name: "reflects the client's proof", nonce: bytes.Repeat([]byte{3}, nonceSize),
			proof: func(a authMsg, _ []byte) []byte { return a.MAC },
			want:  "could not prove it knows the token"},
		{name: "short nonce", nonce: []byte{1, 2, 3}, want: "sent a 3-byte challenge nonce, want 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cnc, snc := net.Pipe()
			defer snc.Close()
			ctx := context.Background()
			fake := NewConn(snc, Options{Timeout: time.Second})
			fakeErr := make(chan error, 1)
			go func() {
				fakeErr <- func() error {
					if err := fake.Recv(ctx, KindHello, nil); err != nil {
						return err
					}
					if err := fake.Send(ctx, KindHello, hello{Version: Version, Auth: true}); err != nil {
						return err
					}
					if err := fake.Send(ctx, KindChallenge, challenge{Nonce: tc.nonce}); err != nil {
						return err
					}
					var a authMsg
					if tc.proof == nil {
						return nil
					}
					if err := fake.Recv(ctx, KindAuth, &a); err != nil {
						return err
					}
					if err := fake.Send(ctx, KindAuthOK, authOK{MAC: tc.proof(a, tc.nonce)}); err != nil {
						return err
					}
					// The client says why it hangs up.
					return fake.Recv(ctx, KindStart, nil)
				}()
			}()
			_, err := Client(ctx, cnc, "s3cret")
			wantErr(t, err, tc.want)
			if tc.proof != nil && !errors.Is(err, ErrAuth) {
				t.Errorf("errors.Is(%v, ErrAuth) is false", err)
			}
			ferr := <-fakeErr
			if tc.proof != nil {
				wantErr(t, ferr, "reported: authentication failed: the responder's proof of the token did not verify at the client")
			}
		})
	}
}

// A proof recorded from one connection is useless on the next: each
// responder challenge is fresh.
func TestHandshakeReplay(t *testing.T) {
	ctx := context.Background()
	// Record a genuine client's answer, playing the responder.
	cnc, snc := net.Pipe()
	defer snc.Close()
	go func() { _, _ = Client(ctx, cnc, "s3cret") }()
	rec := NewConn(snc, Options{Timeout: time.Second})
	var recorded authMsg
	err := rec.Recv(ctx, KindHello, nil)
	if err == nil {
		err = rec.Send(ctx, KindHello, hello{Version: Version, Auth: true})
	}
	if err == nil {
		err = rec.Send(ctx, KindChallenge, challenge{Nonce: bytes.Repeat([]byte{7}, nonceSize)})
	}
	if err == nil {
		err = rec.Recv(ctx, KindAuth, &recorded)
	}
	if err != nil {
		t.Fatal(err)
	}

	// Replay it against a real responder, twice.
	var challenges [][]byte
	for range 2 {
		cnc, snc := net.Pipe()
		serr := make(chan error, 1)
		go func() { _, err := Server(ctx, snc, "s3cret"); serr <- err }()
		att := NewConn(cnc, Options{Timeout: time.Second})
		var ch challenge
		err := att.Send(ctx, KindHello, hello{Version: Version, Auth: true})
		if err == nil {
			err = att.Recv(ctx, KindHello, nil)
		}
		if err == nil {
			err = att.Recv(ctx, KindChallenge, &ch)
		}
		if err == nil {
			err = att.Send(ctx, KindAuth, recorded)
		}
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, att.Recv(ctx, KindAuthOK, nil), "authentication failed")
		att.Close() // as a client does, so the responder need not linger
		wantErr(t, <-serr, "failed authentication")
		challenges = append(challenges, ch.Nonce)
	}
	if bytes.Equal(challenges[0], challenges[1]) {
		t.Errorf("two connections got the same challenge %x", challenges[0])
	}
}

// recorder keeps every byte that crosses a connection.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	all []byte
}

func (r *recorder) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.mu.Lock()
	r.all = append(r.all, b[:n]...)
	r.mu.Unlock()
	return n, err
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.all = append(r.all, b...)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

func TestHandshakeTokenNeverOnTheWire(t *testing.T) {
	const token = "correct-horse-battery-staple"
	cnc, snc := connect(t, "tcp")
	rec := &recorder{Conn: cnc}
	client, server := handshake(rec, snc, Options{}, Options{}, token, token)
	if client.err != nil || server.err != nil {
		t.Fatalf("client: %v, server: %v", client.err, server.err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if bytes.Contains(rec.all, []byte(token)) {
		t.Errorf("the token crossed the wire: %q", rec.all)
	}
	b64, _ := json.Marshal([]byte(token))
	if bytes.Contains(rec.all, b64[1:len(b64)-1]) {
		t.Errorf("the token crossed the wire in base64")
	}
}

// A responder that accepts and then says nothing ends the client's
// handshake within its timeout.
func TestHandshakeSilentResponder(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			t.Cleanup(func() { nc.Close() })
		}
	}()
	nc, err := Dial(context.Background(), ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = NewConn(nc, Options{Timeout: short}).ClientHandshake(context.Background(), "s3cret")
	if d := time.Since(start); d > short+slack {
		t.Errorf("handshake gave up after %s with a %s timeout", d, short)
	}
	wantErr(t, err, "ctrl: peer "+ln.Addr().String()+" went silent for 150ms while waiting for hello")
}

// Whatever a client sends, the responder answers with a reason and the
// client side reads it if it can.
func TestHandshakeBadClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		send   []byte
		hangUp bool
		want   string
	}{
		{name: "HTTP", send: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), want: `has magic 0x47455420 ("GET "), not an rdmarun control frame; it looks like HTTP`},
		{name: "spec first", send: rawFrame(Version, KindSpec, `{}`), want: "got spec from"},
		{name: "hangs up mid-hello", send: []byte("RDMR\x00\x01"), hangUp: true, want: "closed the control connection in the middle of a frame header (6 of 12 bytes) while waiting for hello"},
		{name: "silent", want: "went silent for 150ms while waiting for hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cnc, snc := connect(t, "tcp")
			if _, err := cnc.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.hangUp {
				cnc.Close()
			}
			start := time.Now()
			errc := make(chan error, 1)
			go func() { errc <- NewConn(snc, Options{Timeout: short}).ServerHandshake(context.Background(), "") }()
			if !tc.hangUp && tc.send != nil {
				f, _, err := readFrame(cnc, Version, DefaultMaxPayload, "responder")
				if err != nil || f.kind != KindError {
					t.Errorf("the responder answered %s %q, %v; want an error frame", f.kind, f.payload, err)
				}
				cnc.Close()
			}
			err := <-errc
			if d := time.Since(start); d > short+slack {
				t.Errorf("responder took %s to give up", d)
			}
			wantErr(t, err, tc.want)
		})
	}
}

// A client that reached something else gets told so.
func TestHandshakeNotAResponder(t *testing.T) {
	cnc, snc := connect(t, "tcp")
	go func() {
		buf := make([]byte, 64)
		_, _ = snc.Read(buf)
		_, _ = snc.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
	}()
	_, err := Client(context.Background(), cnc, "")
	wantErr(t, err, `has magic 0x48545450 ("HTTP"), not an rdmarun control frame; it looks like HTTP (is something else listening on this port?)`)
}

// fuzzConn is a net.Conn that reads canned bytes and discards writes, so a
// fuzzed peer needs no goroutine or socket.
type fuzzConn struct{ r *bytes.Reader }

func (f fuzzConn) Read(b []byte) (int, error)     { return f.r.Read(b) }
func (fuzzConn) Write(b []byte) (int, error)      { return len(b), nil }
func (fuzzConn) Close() error                     { return nil }
func (fuzzConn) LocalAddr() net.Addr              { return fuzzAddr{} }
func (fuzzConn) RemoteAddr() net.Addr             { return fuzzAddr{} }
func (fuzzConn) SetDeadline(time.Time) error      { return nil }
func (fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (fuzzConn) SetWriteDeadline(time.Time) error { return nil }
func (fuzzAddr) Network() string                  { return "fuzz" }
func (fuzzAddr) String() string                   { return "fuzz" }

type fuzzAddr struct{}

// FuzzHandshake feeds arbitrary peer bytes to both sides of the handshake:
// they must fail or succeed, never panic or accept a wrong proof.
func FuzzHandshake(f *testing.F) {
	// Seed with what real peers send, so mutations start from valid frames.
	cnc, snc := net.Pipe()
	crec, srec := &recorder{Conn: cnc}, &recorder{Conn: snc}
	client, server := handshake(crec, srec, Options{}, Options{}, "t", "t")
	if client.err != nil || server.err != nil {
		f.Fatalf("client: %v, server: %v", client.err, server.err)
	}
	f.Add(crec.all)
	f.Add(rawFrame(Version, KindHello, `{"version":1,"auth":true}`))
	f.Add(rawFrame(Version, KindHello, `{"version":1,"auth":false}`))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, token := range []string{"", "t"} {
			s := NewConn(fuzzConn{bytes.NewReader(data)}, Options{MaxPayload: 4096})
			if err := s.ServerHandshake(context.Background(), token); err == nil && token != "" {
				t.Fatalf("responder accepted %q", data)
			}
			c := NewConn(fuzzConn{bytes.NewReader(data)}, Options{MaxPayload: 4096})
			if err := c.ClientHandshake(context.Background(), token); err == nil && token != "" {
				t.Fatalf("client accepted %q", data)
			}
		}
	})
}
