package ctrl

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

const nonceSize = 32

// macLabel separates these MACs from any other use of the same token.
const macLabel = "rdmarun-ctrl-v1"

// hello is the first message each way. Its shape is fixed across protocol
// versions (see the package doc): fields may be added, never changed.
type hello struct {
	Version  uint16 `json:"version"`
	Software string `json:"software,omitempty"`
	Auth     bool   `json:"auth"` // the sender has a token
}

type challenge struct {
	Nonce []byte `json:"nonce"`
}

type authMsg struct {
	Nonce []byte `json:"nonce"`
	MAC   []byte `json:"mac"`
}

type authOK struct {
	MAC []byte `json:"mac"`
}

// Client runs the client side of the handshake on nc (a *tls.Conn from Dial
// runs over TLS) with default Options. An empty token means no
// authentication, which the responder must agree to. On error nc is closed.
func Client(ctx context.Context, nc net.Conn, token string) (*Conn, error) {
	c := NewConn(nc, Options{})
	if err := c.ClientHandshake(ctx, token); err != nil {
		return nil, err
	}
	return c, nil
}

// Server runs the responder side of the handshake on nc (a *tls.Conn from
// a Listen listener runs over TLS) with default Options. A client that
// fails it is told why in an error frame before nc is closed.
func Server(ctx context.Context, nc net.Conn, token string) (*Conn, error) {
	c := NewConn(nc, Options{})
	if err := c.ServerHandshake(ctx, token); err != nil {
		return nil, err
	}
	return c, nil
}

// ClientHandshake is Client for a Conn made with NewConn.
func (c *Conn) ClientHandshake(ctx context.Context, token string) error {
	err := c.tlsHandshake(ctx, false)
	if err == nil {
		err = c.clientHandshake(ctx, token)
	}
	if err != nil {
		c.nc.Close()
	}
	return err
}

// ServerHandshake is Server for a Conn made with NewConn.
func (c *Conn) ServerHandshake(ctx context.Context, token string) error {
	if err := c.tlsHandshake(ctx, true); err != nil {
		c.nc.Close()
		return err
	}
	if err := c.serverHandshake(ctx, token); err != nil {
		c.wmu.Lock()
		told := c.told
		c.wmu.Unlock()
		if told {
			// The error frame is in flight; a plain Close with the
			// client's bytes unread could reset the connection and lose it.
			lingerClose(c.nc)
		} else {
			c.nc.Close()
		}
		return err
	}
	return nil
}

func (c *Conn) clientHandshake(ctx context.Context, token string) error {
	if err := c.Send(ctx, KindHello, hello{Version: c.version, Software: c.software, Auth: token != ""}); err != nil {
		return err
	}
	var h hello
	if err := c.Recv(ctx, KindHello, &h); err != nil {
		return err
	}
	if h.Version != c.version {
		return &ProtocolError{Op: "handshake", Peer: c.peer, Err: ErrVersion, Reason: fmt.Sprintf(
			"responder %s says it speaks control protocol version %d in a version %d frame (a broken responder)", c.peer, h.Version, c.version)}
	}
	// The responder refuses a token mismatch itself; these checks are for
	// one that does not, since a client with a token must never carry on
	// with an unauthenticated peer.
	switch {
	case token != "" && !h.Auth:
		return authErrorf("ctrl: responder %s has no token but this client has one; give both ends the same token, or neither", c.peer)
	case token == "" && h.Auth:
		return authErrorf("ctrl: responder %s requires a token but this client has none; give the client the responder's token", c.peer)
	case token == "":
		return nil
	}

	var ch challenge
	if err := c.Recv(ctx, KindChallenge, &ch); err != nil {
		return err
	}
	if len(ch.Nonce) != nonceSize {
		return &ProtocolError{Op: "handshake", Peer: c.peer, Reason: fmt.Sprintf(
			"responder %s sent a %d-byte challenge nonce, want %d", c.peer, len(ch.Nonce), nonceSize)}
	}
	mine := newNonce()
	if err := c.Send(ctx, KindAuth, authMsg{Nonce: mine, MAC: mac(token, ch.Nonce, mine)}); err != nil {
		return err
	}
	var ok authOK
	if err := c.Recv(ctx, KindAuthOK, &ok); err != nil {
		return err
	}
	if !hmac.Equal(ok.MAC, mac(token, mine, ch.Nonce)) {
		_ = c.sendError(ctx, codeAuth, "authentication failed: the responder's proof of the token did not verify at the client")
		return authErrorf("ctrl: responder %s accepted this client but could not prove it knows the token (not the responder you meant, or one that accepts anyone); not trusting it with the test", c.peer)
	}
	return nil
}

func (c *Conn) serverHandshake(ctx context.Context, token string) error {
	var h hello
	if err := c.Recv(ctx, KindHello, &h); err != nil {
		var pe *ProtocolError
		if errors.As(err, &pe) {
			code, msg := codeProtocol, "this is an rdmarun responder and the first frame was not a hello it could read"
			if errors.Is(err, ErrVersion) {
				code = codeVersion
				msg = fmt.Sprintf("the responder speaks control protocol version %d%s", c.version, c.softwareNote())
			}
			_ = c.sendError(ctx, code, msg)
		}
		return err
	}
	switch {
	case token != "" && !h.Auth:
		_ = c.sendError(ctx, codeAuth, "authentication failed: the responder requires a token and the client has none; give the client the responder's token")
		return authErrorf("ctrl: client %s has no token but this responder requires one; give the client the same token", c.peer)
	case token == "" && h.Auth:
		_ = c.sendError(ctx, codeAuth, "the responder has no token but the client has one; give both ends the same token, or neither")
		return authErrorf("ctrl: client %s has a token but this responder has none; give both ends the same token, or neither", c.peer)
	}
	if err := c.Send(ctx, KindHello, hello{Version: c.version, Software: c.software, Auth: token != ""}); err != nil {
		return err
	}
	if token == "" {
		return nil
	}

	mine := newNonce()
	if err := c.Send(ctx, KindChallenge, challenge{Nonce: mine}); err != nil {
		return err
	}
	var a authMsg
	if err := c.Recv(ctx, KindAuth, &a); err != nil {
		return err
	}
	// A client nonce equal to ours would make the two MACs equal, letting
	// an impostor reflect our own proof back; it never happens by chance.
	if len(a.Nonce) != nonceSize || bytes.Equal(a.Nonce, mine) || !hmac.Equal(a.MAC, mac(token, mine, a.Nonce)) {
		_ = c.sendError(ctx, codeAuth, "authentication failed: the client's token is not the responder's")
		return authErrorf("ctrl: client %s failed authentication: its token is not this responder's", c.peer)
	}
	return c.Send(ctx, KindAuthOK, authOK{MAC: mac(token, a.Nonce, mine)})
}

func (c *Conn) softwareNote() string {
	if c.software == "" {
		return ""
	}
	return " (" + c.software + ")"
}

// mac is HMAC-SHA256(token, first || second || macLabel); the client proves
// itself over (server nonce, client nonce), the responder over the reverse.
func mac(token string, first, second []byte) []byte {
	h := hmac.New(sha256.New, []byte(token))
	h.Write(first)
	h.Write(second)
	h.Write([]byte(macLabel))
	return h.Sum(nil)
}

func newNonce() []byte {
	b := make([]byte, nonceSize)
	rand.Read(b) // crypto/rand.Read never fails; it crashes the program instead
	return b
}

// lingerTime bounds how long a refusing responder waits for the client to
// read its error frame and hang up.
const lingerTime = time.Second

// lingerClose closes nc after the peer has had a chance to read what was
// last written: closing with unread input sends a reset, and a client that
// gets the reset first never sees the error frame that explains it.
func lingerClose(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
	nc.Close()
}

// tlsHandshake runs the TLS handshake, if nc is TLS, under the same deadline
// rules as a Recv, and explains the common failures.
func (c *Conn) tlsHandshake(ctx context.Context, server bool) error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	err := tc.HandshakeContext(ctx)
	if err == nil {
		return nil
	}
	var rh tls.RecordHeaderError
	if server && errors.As(err, &rh) && rh.Conn != nil {
		// The client speaks plain text: tell it so in a frame it can read.
		if [4]byte(rh.RecordHeader[:4]) == magic {
			p, _ := json.Marshal(errorPayload{Code: codeProtocol, Message: "this responder requires TLS and the client connected without it; enable TLS on the client"})
			_ = rh.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
			_, _ = rh.Conn.Write(appendFrame(nil, c.version, KindError, p))
			lingerClose(rh.Conn)
			return fmt.Errorf("ctrl: client %s connected without TLS but this responder requires it; enable TLS on the client: %w", c.peer, err)
		}
		return fmt.Errorf("ctrl: client %s did not start a TLS handshake (first bytes %q; is it an rdmarun client?): %w", c.peer, rh.RecordHeader[:], err)
	}
	return tlsError(c.peer, server, c.timeout, err)
}

// authError is a failed token handshake; it matches ErrAuth without adding
// that sentinel's words to a message that already says what went wrong.
type authError struct{ msg string }

func (e *authError) Error() string        { return e.msg }
func (e *authError) Is(target error) bool { return target == ErrAuth }

func authErrorf(format string, args ...any) error {
	return &authError{fmt.Sprintf(format, args...)}
}
