package ctrl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Options tunes a Conn. The zero value means the defaults.
type Options struct {
	// Timeout bounds each read and write whose context has no deadline;
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxPayload bounds the payload of each frame sent or received; 0 means
	// DefaultMaxPayload. Both ends should use the same value.
	MaxPayload uint32
	// Software names this build, e.g. "rdmarun v0.3.0", so that a peer of
	// another protocol version can say what it is talking to.
	Software string

	// version replaces Version so tests can fake an older or newer peer.
	version uint16
}

// Conn is one control connection. Send and Recv may be called from two
// goroutines at once (one sending, one receiving), but not two of each.
type Conn struct {
	nc         net.Conn
	peer       string
	timeout    time.Duration
	maxPayload uint32
	version    uint16
	software   string

	rmu  sync.Mutex
	rerr error // sticky: the read side is out of step with the peer
	wmu  sync.Mutex
	werr error // sticky: a frame was written in part
	told bool  // an error frame went out, so close gently (lingerClose)
}

// NewConn wraps nc without a handshake; Client and Server are the usual way
// in. It is for callers that need Options: NewConn, then ClientHandshake or
// ServerHandshake.
func NewConn(nc net.Conn, o Options) *Conn {
	c := &Conn{
		nc:         nc,
		peer:       nc.RemoteAddr().String(),
		timeout:    o.Timeout,
		maxPayload: o.MaxPayload,
		version:    o.version,
		software:   o.Software,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxPayload == 0 {
		c.maxPayload = DefaultMaxPayload
	}
	if c.version == 0 {
		c.version = Version
	}
	return c
}

// Peer is the remote address, as used in error messages.
func (c *Conn) Peer() string { return c.peer }

// NetConn is the underlying connection (a *tls.Conn over TLS).
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the underlying connection. A goodbye, if the protocol step
// calls for one, is the caller's Send(ctx, KindBye, nil).
//
// After an error frame it closes gently (lingerClose, at most a second):
// a peer that sent its next frame before reading ours (a client pipelines
// its spec after the handshake, and a busy responder answers before
// reading it) would otherwise get a reset, which can arrive before the
// error frame is read and take it away.
func (c *Conn) Close() error {
	c.wmu.Lock()
	told := c.told
	c.wmu.Unlock()
	if told {
		lingerClose(c.nc)
		return nil
	}
	return c.nc.Close()
}

// RemoteError is an error frame from the peer: it gave up and said why.
type RemoteError struct {
	Peer string
	Code string // "auth", "version", "protocol" from the handshake; "timeout" from SendTimeout; "setup" from SendSetup; "" from SendError
	Msg  string
}

func (e *RemoteError) Error() string { return "ctrl: peer " + e.Peer + " reported: " + e.Msg }

// Unwrap lets errors.Is(err, ErrAuth) and errors.Is(err, ErrVersion) hold
// for refusals the peer made during the handshake, and
// errors.Is(err, ErrPeerTimeout) for a peer that timed out. Codes this end
// does not know unwrap to nothing, so a newer peer's stay plain errors.
func (e *RemoteError) Unwrap() error {
	switch e.Code {
	case codeAuth:
		return ErrAuth
	case codeVersion:
		return ErrVersion
	case codeTimeout:
		return ErrPeerTimeout
	case codeSetup:
		return ErrPeerSetup
	}
	return nil
}

const (
	codeAuth     = "auth"
	codeVersion  = "version"
	codeProtocol = "protocol"
	codeTimeout  = "timeout"
	codeSetup    = "setup"
)

// Send encodes v as JSON and sends it as one frame of the given kind; a nil
// v sends an empty payload. Errors go through SendError, not Send.
func (c *Conn) Send(ctx context.Context, kind Kind, v any) error {
	if !kind.known() {
		return fmt.Errorf("ctrl: cannot send message kind %d: not a kind of this protocol", uint16(kind))
	}
	if kind == KindError {
		return errors.New("ctrl: send errors with SendError, which gives them the shape every protocol version reads")
	}
	var payload []byte
	if v != nil {
		var err error
		if payload, err = json.Marshal(v); err != nil {
			return fmt.Errorf("ctrl: encoding the %s message as JSON: %w", kind, err)
		}
	}
	return c.send(ctx, kind, payload)
}

// SendError tells the peer this end is giving up and why; its Recv returns
// a *RemoteError with msg. Write msg for the person reading the other
// end's output.
func (c *Conn) SendError(ctx context.Context, msg string) error {
	return c.sendError(ctx, "", msg)
}

// SendTimeout is SendError for a failure that was a deadline passing on
// this end; the peer's error then matches ErrPeerTimeout.
func (c *Conn) SendTimeout(ctx context.Context, msg string) error {
	return c.sendError(ctx, codeTimeout, msg)
}

// SendSetup is SendError for a failure of this host's own set-up (no
// device, the locked-memory limit); the peer's error then matches
// ErrPeerSetup. A peer of a release before it reads a plain error.
func (c *Conn) SendSetup(ctx context.Context, msg string) error {
	return c.sendError(ctx, codeSetup, msg)
}

func (c *Conn) sendError(ctx context.Context, code, msg string) error {
	payload, err := json.Marshal(errorPayload{Code: code, Message: msg})
	if err != nil {
		return fmt.Errorf("ctrl: encoding an error message: %w", err)
	}
	return c.send(ctx, KindError, payload)
}

func (c *Conn) send(ctx context.Context, kind Kind, payload []byte) error {
	if uint64(len(payload)) > uint64(c.maxPayload) {
		return fmt.Errorf("ctrl: the %s message is %d bytes of JSON, over the %d-byte frame limit; raise Options.MaxPayload on both ends",
			kind, len(payload), c.maxPayload)
	}
	buf := appendFrame(make([]byte, 0, headerSize+len(payload)), c.version, kind, payload)

	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ctrl: did not send %s to %s: %w", kind, c.peer, err)
	}
	d := c.setDeadline(ctx, c.nc.SetWriteDeadline)
	stop := interruptOnCancel(ctx, c.nc.SetWriteDeadline)
	n, err := c.nc.Write(buf)
	stop()
	if err == nil {
		c.told = c.told || kind == KindError
		return nil
	}
	inStep := n == 0 && isDeadline(err)
	err = c.writeError(ctx, kind, d, n, err)
	if !inStep {
		c.werr = err
	}
	return err
}

// Recv receives the next frame, which must be of kind want, and decodes its
// payload into v (unless v is nil). An error frame from the peer comes back
// as *RemoteError; any other kind is a *ProtocolError naming both.
func (c *Conn) Recv(ctx context.Context, want Kind, v any) error {
	f, err := c.recv(ctx, "waiting for "+want.String())
	if err != nil {
		return err
	}
	if f.kind != want {
		how := "got " + f.kind.String()
		if f.kind == KindBye {
			how = "the peer said bye"
		}
		return &ProtocolError{Op: "waiting for " + want.String(), Peer: c.peer, Reason: fmt.Sprintf(
			"%s from %s, but this end expects %s next (the two ends disagree on the protocol's steps)", how, c.peer, want)}
	}
	if v == nil {
		return nil
	}
	return c.decode(f, v)
}

// RecvAny receives the next frame of any kind and returns its raw JSON
// payload (nil if empty). An error frame still comes back as *RemoteError.
func (c *Conn) RecvAny(ctx context.Context) (Kind, json.RawMessage, error) {
	f, err := c.recv(ctx, "waiting for the next message")
	if err != nil {
		return 0, nil, err
	}
	return f.kind, f.payload, nil
}

func (c *Conn) decode(f frame, v any) error {
	if len(f.payload) == 0 {
		return &ProtocolError{Op: "reading " + f.kind.String(), Peer: c.peer, Reason: fmt.Sprintf(
			"%s from %s has no payload, but one was expected", f.kind, c.peer)}
	}
	if err := json.Unmarshal(f.payload, v); err != nil {
		return &ProtocolError{Op: "reading " + f.kind.String(), Peer: c.peer, Reason: fmt.Sprintf(
			"%s from %s does not decode into %T: %v (the two ends disagree on the message's shape)", f.kind, c.peer, v, err)}
	}
	return nil
}

// Quiet checks, without waiting, that the peer has neither closed the
// connection nor sent anything. Between the runs of a kept session the
// peer has nothing to say, so anything but silence means the session is
// over: Quiet returns nil for silence and otherwise why, and the read
// side is then out of step for good.
func (c *Conn) Quiet() error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return c.rerr
	}
	n, err := c.peek()
	switch {
	case n > 0:
		c.rerr = &ProtocolError{Peer: c.peer, Op: "waiting between requests", Reason: "the peer sent data unasked"}
	case err == nil || isDeadline(err):
		return nil
	default:
		c.rerr = c.readError(context.Background(), "waiting between requests", 0, err)
	}
	return c.rerr
}

// peek looks for a byte from the peer without waiting for one. A plain
// socket is asked directly (MSG_PEEK|MSG_DONTWAIT), which a prober does
// before every probe and which costs one system call. TLS cannot be
// asked that way: bytes on the socket may be TLS's own records (a
// close_notify, a key update), which only a read through TLS tells from
// data; that read gets a deadline a moment ahead (one already past makes
// Go fail the read before trying it).
func (c *Conn) peek() (int, error) {
	if sc, ok := c.nc.(syscall.Conn); ok {
		rc, err := sc.SyscallConn()
		if err != nil {
			return 0, err
		}
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			var b [1]byte
			n, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return true
		}); err != nil {
			return 0, err
		}
		switch {
		case rerr == syscall.EAGAIN:
			return 0, nil
		case rerr != nil:
			return 0, rerr
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		return 0, fmt.Errorf("ctrl: the connection to %s is unusable: %w", c.peer, err)
	}
	var b [1]byte
	return c.nc.Read(b[:])
}

func (c *Conn) recv(ctx context.Context, op string) (frame, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return frame{}, c.rerr
	}
	if err := ctx.Err(); err != nil {
		return frame{}, fmt.Errorf("ctrl: %s from %s: %w", op, c.peer, err)
	}
	d := c.setDeadline(ctx, c.nc.SetReadDeadline)
	stop := interruptOnCancel(ctx, c.nc.SetReadDeadline)
	f, n, err := readFrame(c.nc, c.version, c.maxPayload, c.peer)
	stop()
	if err != nil {
		// A deadline or cancellation before the first byte leaves the
		// stream in step, so the caller may wait again; so does a frame
		// of an unknown kind, read whole, which the caller may answer.
		inStep := (n == 0 && isDeadline(err)) || errors.Is(err, ErrUnknownKind)
		err = c.readError(ctx, op, d, err)
		if !inStep {
			c.rerr = err
		}
		return frame{}, err
	}
	if f.kind == KindError {
		var p errorPayload
		if json.Unmarshal(f.payload, &p) != nil || p.Message == "" {
			p.Message = "an error it did not explain (payload " + snippet(f.payload) + ")"
		}
		return frame{}, &RemoteError{Peer: c.peer, Code: p.Code, Msg: p.Message}
	}
	return f, nil
}

// setDeadline applies the context's deadline, or the Conn's timeout, and
// returns how long that is, for messages.
func (c *Conn) setDeadline(ctx context.Context, set func(time.Time) error) time.Duration {
	// The wait is what the peer is given: the connection's own timeout,
	// or what is left of the caller's deadline, read before the syscall
	// so that a slow set does not shorten the "silent for" it reports.
	d := c.timeout
	dl, ok := ctx.Deadline()
	if ok {
		d = time.Until(dl)
	} else {
		dl = time.Now().Add(d)
	}
	_ = set(dl) // fails only on a closed conn, which the I/O reports better
	return d
}

// interruptOnCancel makes a blocked read or write return when ctx is
// cancelled before its deadline. The returned stop waits for a running
// interrupt to finish, so it cannot land on the next call's deadline.
func interruptOnCancel(ctx context.Context, set func(time.Time) error) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	done := make(chan struct{})
	unregister := context.AfterFunc(ctx, func() {
		_ = set(time.Unix(1, 0))
		close(done)
	})
	return func() {
		if !unregister() {
			<-done
		}
	}
}

// ctxErr is ctx.Err(), or DeadlineExceeded if the deadline has passed but
// the context's own timer has not fired yet: the I/O deadline, set to the
// same instant, often wins the race.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *Conn) readError(ctx context.Context, op string, d time.Duration, err error) error {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		pe.Op = op
		return pe
	}
	var partial *partialError
	mid := ""
	if errors.As(err, &partial) {
		mid = " " + partial.where()
	}
	var opErr *net.OpError
	switch {
	case isDeadline(err) && errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("ctrl: %s from %s: stopped%s: %w", op, c.peer, mid, ctx.Err())
	case isDeadline(err) && d < time.Millisecond:
		// The caller's deadline was already (or all but) spent when the
		// wait began; "silent for 0s" would blame the peer for it.
		return &timeoutError{fmt.Sprintf("ctrl: no time was left for %s from peer %s%s: the deadline had passed on earlier steps", op, c.peer, mid), err, ctxErr(ctx)}
	case isDeadline(err):
		return &timeoutError{fmt.Sprintf("ctrl: peer %s went silent for %s%s while %s", c.peer, fmtDur(d), mid, op), err, ctxErr(ctx)}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if mid != "" {
			return fmt.Errorf("ctrl: peer %s closed the control connection%s while %s: %w", c.peer, mid, op, err)
		}
		return fmt.Errorf("ctrl: peer %s closed the control connection while %s: %w", c.peer, op, err)
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("ctrl: peer %s reset the control connection%s while %s (it crashed, or closed with data unread): %w", c.peer, mid, op, err)
	case errors.Is(err, net.ErrClosed):
		return fmt.Errorf("ctrl: the control connection to %s was closed on this end while %s: %w", c.peer, op, err)
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return fmt.Errorf("ctrl: peer %s ended TLS with an alert while %s: %w (does it accept this end's certificate?)", c.peer, op, err)
	}
	return fmt.Errorf("ctrl: %s from %s%s: %w", op, c.peer, mid, err)
}

func (c *Conn) writeError(ctx context.Context, kind Kind, d time.Duration, n int, err error) error {
	part := ""
	if n > 0 {
		part = fmt.Sprintf(" (%d bytes went out, the stream is now unusable)", n)
	}
	switch {
	case isDeadline(err) && errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("ctrl: sending %s to %s: stopped%s: %w", kind, c.peer, part, ctx.Err())
	case isDeadline(err) && d < time.Millisecond:
		return &timeoutError{fmt.Sprintf("ctrl: no time was left for sending %s to %s%s: the deadline had passed on earlier steps", kind, c.peer, part), err, ctxErr(ctx)}
	case isDeadline(err):
		return &timeoutError{fmt.Sprintf("ctrl: peer %s took nothing of the %s message for %s%s (it stopped reading)", c.peer, kind, fmtDur(d), part), err, ctxErr(ctx)}
	case errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrClosedPipe):
		return fmt.Errorf("ctrl: peer %s closed the control connection before the %s message could be sent: %w", c.peer, kind, err)
	case errors.Is(err, net.ErrClosed):
		return fmt.Errorf("ctrl: the control connection to %s was closed on this end before the %s message could be sent: %w", c.peer, kind, err)
	}
	return fmt.Errorf("ctrl: sending %s to %s%s: %w", kind, c.peer, part, err)
}

// timeoutError is a deadline that passed. It wraps the I/O error and the
// context's, so errors.Is works with os.ErrDeadlineExceeded and
// context.DeadlineExceeded alike, and Timeout lets it pass as a net.Error.
type timeoutError struct {
	msg string
	io  error
	ctx error
}

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Unwrap() []error { return []error{e.io, e.ctx} }

func isDeadline(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// fmtDur rounds a deadline for people: "10s", "250ms".
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d > 0:
		return d.Round(time.Millisecond).String()
	}
	return "0s"
}
