package ctrl

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// short is the deadline of tests that wait for a silent peer, and slack the
// most such a test may overrun it by: a bound, not a timing benchmark.
const (
	short = 150 * time.Millisecond
	slack = time.Second
)

// pipeConn wraps one end of a pipe in a Conn and hands back the raw other
// end, so the test can play a peer that breaks the protocol.
func pipeConn(t *testing.T, o Options) (*Conn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewConn(a, o), b
}

// write sends bytes from the raw end without blocking the test (pipe writes
// wait for the reader); then, if close, hangs up.
func write(raw net.Conn, close bool, chunks ...[]byte) {
	go func() {
		for _, c := range chunks {
			if _, err := raw.Write(c); err != nil {
				return
			}
		}
		if close {
			raw.Close()
		}
	}()
}

func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q\ndoes not contain %q", err, s)
		}
	}
}

type spec struct {
	Op    string `json:"op"`
	Iters int    `json:"iters"`
}

func TestSendRecv(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ca, cb := NewConn(a, Options{}), NewConn(b, Options{})
	ctx := context.Background()
	sent := spec{Op: "write", Iters: 1000}
	errc := make(chan error, 1)
	go func() {
		err := ca.Send(ctx, KindSpec, sent)
		if err == nil {
			err = ca.Send(ctx, KindReady, nil)
		}
		if err == nil {
			err = ca.SendError(ctx, "no device mlx5_9 on the responder")
		}
		errc <- err
	}()
	var got spec
	if err := cb.Recv(ctx, KindSpec, &got); err != nil {
		t.Fatal(err)
	}
	if got != sent {
		t.Errorf("got %+v, want %+v", got, sent)
	}
	kind, payload, err := cb.RecvAny(ctx)
	if err != nil || kind != KindReady || payload != nil {
		t.Errorf("RecvAny = %s, %q, %v; want ready, no payload, no error", kind, payload, err)
	}
	err = cb.Recv(ctx, KindResult, nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Msg != "no device mlx5_9 on the responder" || errors.Is(err, ErrAuth) {
		t.Errorf("got %v, want a RemoteError with the message", err)
	}
	wantErr(t, err, "ctrl: peer pipe reported: no device mlx5_9 on the responder")
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestRecvErrors(t *testing.T) {
	mid := append(header("RDMR", Version, KindSpecOK, 100), "0123456789"...)
	for _, tc := range []struct {
		name   string
		peer   [][]byte // what the raw peer writes
		hangUp bool     // then it closes
		into   any
		want   []string
		is     []error
		sticky bool // the next Recv fails the same way at once
	}{
		{name: "other kind", peer: [][]byte{rawFrame(Version, KindResult, `{}`)},
			want: []string{"ctrl: waiting for spec-ok: got result from pipe, but this end expects spec-ok next"}},
		{name: "bye", peer: [][]byte{rawFrame(Version, KindBye, ``)}, want: []string{"the peer said bye from pipe, but this end expects spec-ok"}},
		{name: "error frame", peer: [][]byte{rawFrame(Version, KindError, `{"message":"out of memory"}`)}, want: []string{"ctrl: peer pipe reported: out of memory"}},
		{name: "error frame without message", peer: [][]byte{rawFrame(Version, KindError, `[1]`)}, want: []string{`reported: an error it did not explain (payload "[1]")`}},
		{name: "auth refusal", peer: [][]byte{rawFrame(Version, KindError, `{"code":"auth","message":"authentication failed"}`)},
			want: []string{"reported: authentication failed"}, is: []error{ErrAuth}},
		{name: "wrong shape", peer: [][]byte{rawFrame(Version, KindSpecOK, `{"iters":"many"}`)}, into: &spec{},
			want: []string{"ctrl: reading spec-ok: spec-ok from pipe does not decode into *ctrl.spec: json: cannot unmarshal"}},
		{name: "no payload", peer: [][]byte{rawFrame(Version, KindSpecOK, ``)}, into: &spec{},
			want: []string{"spec-ok from pipe has no payload, but one was expected"}},
		{name: "HTTP", peer: [][]byte{[]byte("GET / HTTP/1.1\r\n\r\n")}, sticky: true,
			want: []string{`ctrl: waiting for spec-ok: frame from pipe has magic 0x47455420 ("GET "), not an rdmarun control frame; it looks like HTTP`}},
		{name: "silent", want: []string{"ctrl: peer pipe went silent for 150ms while waiting for spec-ok"},
			is: []error{os.ErrDeadlineExceeded}},
		{name: "silent mid-frame", peer: [][]byte{mid}, sticky: true, is: []error{os.ErrDeadlineExceeded},
			want: []string{"ctrl: peer pipe went silent for 150ms in the middle of a spec-ok frame (22 of 112 bytes) while waiting for spec-ok"}},
		{name: "closed", hangUp: true, sticky: true, is: []error{io.EOF},
			want: []string{"ctrl: peer pipe closed the control connection while waiting for spec-ok"}},
		{name: "closed mid-header", peer: [][]byte{[]byte("RDMR\x00")}, hangUp: true, sticky: true, is: []error{io.ErrUnexpectedEOF},
			want: []string{"ctrl: peer pipe closed the control connection in the middle of a frame header (5 of 12 bytes) while waiting for spec-ok"}},
		{name: "closed mid-payload", peer: [][]byte{mid}, hangUp: true, sticky: true,
			want: []string{"closed the control connection in the middle of a spec-ok frame (22 of 112 bytes) while waiting for spec-ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, raw := pipeConn(t, Options{Timeout: short})
			write(raw, tc.hangUp, tc.peer...)
			start := time.Now()
			err := c.Recv(context.Background(), KindSpecOK, tc.into)
			if d := time.Since(start); d > short+slack {
				t.Errorf("Recv took %s with a %s timeout", d, short)
			}
			wantErr(t, err, tc.want...)
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) is false", err, target)
				}
			}
			if tc.sticky {
				start = time.Now()
				again := c.Recv(context.Background(), KindSpecOK, tc.into)
				if again != err || time.Since(start) > short/2 {
					t.Errorf("second Recv: %v after %s, want the same error at once", again, time.Since(start))
				}
			}
		})
	}
}

var silentRe = regexp.MustCompile(`^ctrl: peer pipe went silent for 1[0-9]{2}ms while waiting for result$`)

// A deadline or cancellation that strikes before the first byte leaves the
// stream in step, so a caller may wait again.
func TestRecvContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want string
		is   error
	}{
		// The time waited is what was left of the deadline when Recv
		// began, a few ms under it on a loaded machine; silentRe checks it.
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(context.Background(), short) },
			"while waiting for result", context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(short/2, cancel)
			return ctx, cancel
		}, "ctrl: waiting for result from pipe: stopped: context canceled", context.Canceled},
		{"already cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, "ctrl: waiting for result from pipe: context canceled", context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A long Conn timeout shows the context's deadline is the one used.
			c, raw := pipeConn(t, Options{Timeout: time.Minute})
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			err := c.Recv(ctx, KindResult, nil)
			if d := time.Since(start); d > short+slack {
				t.Errorf("Recv took %s", d)
			}
			wantErr(t, err, tc.want)
			if tc.name == "deadline" && !silentRe.MatchString(err.Error()) {
				t.Errorf("error %q does not match %s", err, silentRe)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tc.is)
			}
			write(raw, false, rawFrame(Version, KindResult, `{}`))
			if err := c.Recv(context.Background(), KindResult, nil); err != nil {
				t.Errorf("Recv after the interrupted one: %v", err)
			}
		})
	}
}

// A peer's timeout, or its own host's set-up failing, travels as such:
// the prober counts a timeout with its own, a fleet names that host's
// environment rather than the fabric.
func TestSendCoded(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(*Conn, context.Context, string) error
		msg  string
		want error
	}{
		{"timeout", (*Conn).SendTimeout, "ibv_modify_qp(RTR) on rxe0: connection timed out (errno 110)", ErrPeerTimeout},
		{"setup", (*Conn).SendSetup, "ibv_reg_mr on rxe0: cannot allocate memory (errno 12)", ErrPeerSetup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			ca, cb := NewConn(a, Options{}), NewConn(b, Options{})
			ctx := context.Background()
			errc := make(chan error, 1)
			go func() { errc <- tc.send(ca, ctx, tc.msg) }()
			err := cb.Recv(ctx, KindResult, nil)
			wantErr(t, err, "ctrl: peer pipe reported: "+tc.msg)
			for _, other := range []error{ErrPeerTimeout, ErrPeerSetup, ErrAuth, ErrVersion} {
				if errors.Is(err, other) != (other == tc.want) {
					t.Errorf("%v: errors.Is(%v) = %v; want it to match %v alone", err, other, !(other == tc.want), tc.want)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
	// A code this end does not know stays a plain error.
	if err := (&RemoteError{Peer: "p", Code: "something-newer", Msg: "x"}); errors.Unwrap(err) != nil {
		t.Errorf("unknown code unwraps to %v", errors.Unwrap(err))
	}
}

// A wait that begins with the caller's deadline all but spent must not
// read as a peer silent for 0s: the time went on earlier steps.
func TestRecvDeadlineSpent(t *testing.T) {
	c, _ := pipeConn(t, Options{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Microsecond)
	defer cancel()
	err := c.Recv(ctx, KindResult, nil)
	if err == nil || strings.Contains(err.Error(), "silent for 0s") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Recv with 200us left: %v", err)
	}
	// The wording, whichever way the race above went.
	err = c.readError(ctx, "waiting for result", 0, os.ErrDeadlineExceeded)
	wantErr(t, err, "ctrl: no time was left for waiting for result from peer pipe: the deadline had passed on earlier steps")
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is fails on %v", err)
	}
	err = c.writeError(ctx, KindSpec, 0, 0, os.ErrDeadlineExceeded)
	wantErr(t, err, "ctrl: no time was left for sending spec to pipe: the deadline had passed on earlier steps")
}

func TestSendErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		peer func(raw net.Conn) // what the raw peer does first
		kind Kind
		v    any
		want string
	}{
		{name: "error kind", kind: KindError, v: "x", want: "ctrl: send errors with SendError"},
		{name: "unknown kind", kind: 99, want: "ctrl: cannot send message kind 99: not a kind of this protocol"},
		{name: "not JSON", kind: KindSpec, v: make(chan int), want: "ctrl: encoding the spec message as JSON: json: unsupported type: chan int"},
		{name: "too large", o: Options{MaxPayload: 16}, kind: KindSpec, v: spec{Op: "write"},
			want: "ctrl: the spec message is 24 bytes of JSON, over the 16-byte frame limit; raise Options.MaxPayload on both ends"},
		{name: "peer not reading", o: Options{Timeout: short}, kind: KindSpec, v: spec{},
			want: "ctrl: peer pipe took nothing of the spec message for 150ms (it stopped reading)"},
		{name: "peer gone", peer: func(raw net.Conn) { raw.Close() }, kind: KindSpec, v: spec{},
			want: "ctrl: peer pipe closed the control connection before the spec message could be sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, raw := pipeConn(t, tc.o)
			if tc.peer != nil {
				tc.peer(raw)
			}
			start := time.Now()
			err := c.Send(context.Background(), tc.kind, tc.v)
			if d := time.Since(start); d > short+slack {
				t.Errorf("Send took %s", d)
			}
			wantErr(t, err, tc.want)
		})
	}
}

// tcpConn is a Conn over real loopback TCP and the raw other end: Quiet
// depends on what a socket does after the peer closes, which a pipe does
// not show.
func tcpConn(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	a, b := connect(t, "tcp")
	return NewConn(a, Options{}), b
}

func TestQuiet(t *testing.T) {
	t.Run("silent peer", func(t *testing.T) {
		c, raw := tcpConn(t)
		if err := c.Quiet(); err != nil {
			t.Fatalf("Quiet on a silent, open connection: %v", err)
		}
		// The stream is still in step: a frame sent after reads whole.
		peer := NewConn(raw, Options{})
		if err := peer.Send(context.Background(), KindReady, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Recv(ctx, KindReady, nil); err != nil {
			t.Fatalf("Recv after Quiet: %v", err)
		}
	})
	t.Run("peer closed", func(t *testing.T) {
		c, raw := tcpConn(t)
		raw.Close()
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for err = c.Quiet(); err == nil && time.Now().Before(deadline); err = c.Quiet() {
			time.Sleep(10 * time.Millisecond)
		}
		wantErr(t, err, "closed the control connection", "waiting between requests")
		if again := c.Quiet(); again == nil {
			t.Error("a second Quiet after the peer closed returned nil")
		}
	})
	t.Run("peer spoke unasked", func(t *testing.T) {
		c, raw := tcpConn(t)
		peer := NewConn(raw, Options{})
		if err := peer.Send(context.Background(), KindDone, nil); err != nil {
			t.Fatal(err)
		}
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for err = c.Quiet(); err == nil && time.Now().Before(deadline); err = c.Quiet() {
			time.Sleep(10 * time.Millisecond)
		}
		wantErr(t, err, "sent data unasked")
		if err := c.Recv(context.Background(), KindDone, nil); err == nil {
			t.Error("Recv after the stream went out of step succeeded")
		}
	})
}

// TestCloseAfterErrorIsGentle: a peer that sent its next frame before
// reading ours (a client pipelines its spec; a busy responder answers
// without reading it) reads the error frame and then the end of the
// stream, not a reset. Closing with its frame unread would reset the
// connection, and a reset can take the error frame with it.
func TestCloseAfterErrorIsGentle(t *testing.T) {
	cnc, snc := connect(t, "tcp")
	client, server := handshake(cnc, snc, Options{}, Options{}, "tok", "tok")
	if client.err != nil || server.err != nil {
		t.Fatalf("handshake: %v, %v", client.err, server.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.c.Send(ctx, KindSpec, map[string]int{"size": 2}); err != nil {
		t.Fatal(err)
	}
	// The frame is in the server's socket before the server answers.
	time.Sleep(50 * time.Millisecond)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = server.c.SendError(ctx, "responder busy")
		server.c.Close()
	}()
	var re *RemoteError
	if err := client.c.Recv(ctx, KindSpecOK, nil); !errors.As(err, &re) || re.Msg != "responder busy" {
		t.Fatalf("client got %v, want the error frame", err)
	}
	_ = cnc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := cnc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the error frame the client read %d bytes, %v; want io.EOF (a reset means the server closed with the client's frame unread)", n, err)
	}
	cnc.Close()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's Close did not return after the client hung up")
	}
}
