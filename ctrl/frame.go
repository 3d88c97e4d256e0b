package ctrl

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Version is the control protocol version this build speaks. It changes
// whenever a message changes shape; both ends must speak the same one.
const Version uint16 = 1

const (
	// DefaultMaxPayload bounds one frame's payload. A test spec or a result
	// is a few KiB; the bound exists so a broken or hostile peer cannot make
	// the reader allocate what it declares.
	DefaultMaxPayload uint32 = 1 << 20
	// DefaultTimeout bounds every read and write whose context has no
	// deadline.
	DefaultTimeout = 10 * time.Second
)

const headerSize = 12

var magic = [4]byte{'R', 'D', 'M', 'R'}

// Kind is a message kind, the second field of the frame header.
type Kind uint16

// Hello and Error keep their numbers in every protocol version (see the
// package doc); the others may be renumbered with a version change.
const (
	KindHello Kind = 1 + iota
	KindError
	KindChallenge
	KindAuth
	KindAuthOK
	KindSpec
	KindSpecOK
	KindEndpoints
	KindReady
	KindStart
	KindResult
	KindBye
	// KindDone says every sender on this side has finished: the peer's
	// responders stop waiting and its receivers drain.
	KindDone
	// KindRelay asks a responder to run a test itself, as a client,
	// against another responder (a coordinator's fleet run);
	// KindRelayOK accepts and KindRelayResult answers it. Added within
	// version 1: a client of a build without them never sends them, and
	// a responder without them refuses them (see ErrUnknownKind).
	KindRelay
	KindRelayOK
	KindRelayResult
	// KindDoctor asks a responder for its doctor's report on its own
	// host (rdmarun doctor --peer) instead of a test; KindDoctorReport
	// answers it. Added within version 1 as the relay kinds were: a
	// responder without them answers with an error naming the kind.
	KindDoctor
	KindDoctorReport
	kindEnd // one past the last kind; not a kind
)

var kindNames = [...]string{
	KindHello:        "hello",
	KindError:        "error",
	KindChallenge:    "challenge",
	KindAuth:         "auth",
	KindAuthOK:       "auth-ok",
	KindSpec:         "spec",
	KindSpecOK:       "spec-ok",
	KindEndpoints:    "endpoints",
	KindReady:        "ready",
	KindStart:        "start",
	KindResult:       "result",
	KindBye:          "bye",
	KindDone:         "done",
	KindRelay:        "relay",
	KindRelayOK:      "relay-ok",
	KindRelayResult:  "relay-result",
	KindDoctor:       "doctor",
	KindDoctorReport: "doctor-report",
}

func (k Kind) String() string {
	if k.known() {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func (k Kind) known() bool { return k >= KindHello && k < kindEnd }

// ErrVersion is wrapped by errors caused by the two ends speaking different
// protocol versions; ErrAuth by errors of the token handshake;
// ErrPeerTimeout by a peer's report that it gave up on a deadline of its
// own (on RoCE, often the other end's address never resolving), which is
// a dead path as much as a deadline that passes on this end.
//
// ErrUnknownKind is wrapped by the error for a frame of a kind this build
// does not know: a request of a newer build. The frame is read whole, so
// the stream stays in step and this end can answer with an error frame
// that names its own version instead of dropping the connection.
var (
	ErrUnknownKind = errors.New("unknown message kind")
	ErrVersion     = errors.New("control protocol version mismatch")
	ErrAuth        = errors.New("control channel authentication failed")
	ErrPeerTimeout = errors.New("the peer timed out")
	// ErrPeerSetup matches a peer's report that its own host's set-up
	// failed (no device, the locked-memory limit): about that host, not
	// the fabric.
	ErrPeerSetup = errors.New("the peer's host set-up failed")
)

// ProtocolError reports a peer that broke the protocol: a frame that is not
// ours, of another version, too large or malformed, or a message out of
// order.
type ProtocolError struct {
	Op     string // what this end was doing, e.g. "waiting for spec-ok"
	Peer   string // the peer's address
	Reason string // what was wrong and, where it helps, what to do
	Err    error  // ErrVersion for version mismatches, else nil
}

func (e *ProtocolError) Error() string {
	if e.Op == "" {
		return "ctrl: " + e.Reason
	}
	return "ctrl: " + e.Op + ": " + e.Reason
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// partialError is a transport error that struck after part of a frame was
// read, so the stream can no longer be trusted.
type partialError struct {
	what      string // "frame header" or "spec frame"
	got, want int
	err       error
}

func (e *partialError) Error() string { return e.where() + ": " + e.err.Error() }

func (e *partialError) where() string {
	return fmt.Sprintf("in the middle of a %s (%d of %d bytes)", e.what, e.got, e.want)
}

func (e *partialError) Unwrap() error { return e.err }

type frame struct {
	version uint16
	kind    Kind
	payload []byte
}

// appendFrame appends the encoded frame to dst. Callers check the payload
// against their size limit first.
func appendFrame(dst []byte, version uint16, kind Kind, payload []byte) []byte {
	dst = append(dst, magic[:]...)
	dst = binary.BigEndian.AppendUint16(dst, version)
	dst = binary.BigEndian.AppendUint16(dst, uint16(kind))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// midFrame turns an EOF inside a frame into the unexpected EOF it is.
func midFrame(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// errorPayload is the payload of KindError in every protocol version.
type errorPayload struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// readFrame reads one frame of the given protocol version from r, holding
// payloads to max bytes, and returns it with the number of bytes consumed.
// A transport error after the first byte comes back as *partialError, a
// broken frame as *ProtocolError; peer names the sender in messages.
func readFrame(r io.Reader, version uint16, max uint32, peer string) (frame, int, error) {
	var hdr [headerSize]byte
	n, err := io.ReadFull(r, hdr[:4])
	if err != nil {
		if n == 0 {
			return frame{}, 0, err
		}
		return frame{}, n, &partialError{"frame header", n, headerSize, err}
	}
	// The magic is checked on its own, before the rest of the header, so
	// that a peer that sent a short line of text and waits gets told now
	// rather than after a timeout.
	if [4]byte(hdr[:4]) != magic {
		return frame{}, n, &ProtocolError{Peer: peer, Reason: badMagic(peer, hdr[:4])}
	}
	m, err := io.ReadFull(r, hdr[4:])
	n += m
	if err != nil {
		return frame{}, n, &partialError{"frame header", n, headerSize, midFrame(err)}
	}
	f := frame{
		version: binary.BigEndian.Uint16(hdr[4:]),
		kind:    Kind(binary.BigEndian.Uint16(hdr[6:])),
	}
	length := binary.BigEndian.Uint32(hdr[8:])

	if f.version != version {
		return frame{}, n, versionError(r, &n, f, length, version, max, peer)
	}
	if !f.kind.known() {
		e := &ProtocolError{Peer: peer, Reason: fmt.Sprintf(
			"frame from %s has unknown message kind %d (a peer of another rdmarun build, or a bug)", peer, uint16(f.kind))}
		if length == 0 || length > max {
			return frame{}, n, e
		}
		// Skipping the payload keeps the stream in step, so the
		// answer can be an error frame rather than a dropped connection.
		m, err := io.CopyN(io.Discard, r, int64(length))
		n += int(m)
		if err != nil {
			return frame{}, n, &partialError{"kind(" + strconv.Itoa(int(f.kind)) + ") frame", n, headerSize + int(length), midFrame(err)}
		}
		e.Err = ErrUnknownKind
		return frame{}, n, e
	}
	if length > max {
		return frame{}, n, &ProtocolError{Peer: peer, Reason: fmt.Sprintf(
			"%s frame from %s declares a %d-byte payload, over the %d-byte limit (a broken peer, or the limit needs raising on both ends)",
			f.kind, peer, length, max)}
	}
	if length > 0 {
		f.payload = make([]byte, length)
		m, err = io.ReadFull(r, f.payload)
		n += m
		if err != nil {
			return frame{}, n, &partialError{f.kind.String() + " frame", n, headerSize + int(length), midFrame(err)}
		}
		if !json.Valid(f.payload) {
			return frame{}, n, &ProtocolError{Peer: peer, Reason: fmt.Sprintf(
				"%s frame from %s carries a payload that is not valid JSON: %s", f.kind, peer, snippet(f.payload))}
		}
	}
	return f, n, nil
}

// versionError explains a frame of another protocol version. Hello and
// Error frames look the same in every version, so their payload is read
// (within the limit) to name the peer's software or pass on its message,
// and so the stream stays in step for the error frame this end sends back.
func versionError(r io.Reader, n *int, f frame, length uint32, version uint16, max uint32, peer string) error {
	e := &ProtocolError{Peer: peer, Err: ErrVersion, Reason: fmt.Sprintf(
		"frame from %s speaks control protocol version %d, this end speaks %d; both ends need the same rdmarun release line",
		peer, f.version, version)}
	if (f.kind != KindHello && f.kind != KindError) || length > max || length == 0 {
		return e
	}
	payload := make([]byte, length)
	m, err := io.ReadFull(r, payload)
	*n += m
	if err != nil {
		return e
	}
	switch f.kind {
	case KindHello:
		var h hello
		if json.Unmarshal(payload, &h) == nil && h.Software != "" {
			e.Reason += fmt.Sprintf(" (the peer runs %s)", h.Software)
		}
	case KindError:
		var p errorPayload
		if json.Unmarshal(payload, &p) == nil && p.Message != "" {
			e.Reason += fmt.Sprintf(" (the peer said: %s)", p.Message)
		}
	}
	return e
}

func badMagic(peer string, b []byte) string {
	s := fmt.Sprintf("frame from %s has magic 0x%08x (%q), not an rdmarun control frame", peer, b, b)
	switch {
	case b[0] == 0x16 && b[1] == 0x03:
		return s + "; it is the start of a TLS handshake, so the peer uses TLS and this end does not (enable TLS on both ends or neither)"
	case string(b) == "GET " || string(b) == "POST" || string(b) == "HEAD" || string(b) == "PUT " || string(b) == "HTTP":
		return s + "; it looks like HTTP (is something else listening on this port?)"
	case string(b) == "SSH-":
		return s + "; it looks like SSH (is something else listening on this port?)"
	}
	return s + " (is something else listening on this port?)"
}

// snippet quotes the start of a payload for an error message.
func snippet(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}
