package ctrl

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// header builds a frame header by hand, so tests can break any field.
func header(magic string, version uint16, kind Kind, length uint32) []byte {
	b := []byte(magic)
	b = binary.BigEndian.AppendUint16(b, version)
	b = binary.BigEndian.AppendUint16(b, uint16(kind))
	return binary.BigEndian.AppendUint32(b, length)
}

func rawFrame(version uint16, kind Kind, payload string) []byte {
	return append(header("RDMR", version, kind, uint32(len(payload))), payload...)
}

// The wire format is a promise to every deployed rdmarun; a change here must
// come with a new Version.
func TestFrameWireFormat(t *testing.T) {
	got := hex.EncodeToString(appendFrame(nil, 1, KindHello, []byte(`{"version":1,"auth":false}`)))
	want := "52444d52" + "0001" + "0001" + "0000001a" + hex.EncodeToString([]byte(`{"version":1,"auth":false}`))
	if got != want {
		t.Errorf("hello frame\n got %s\nwant %s", got, want)
	}
	for k, n := range map[Kind]uint16{KindHello: 1, KindError: 2} {
		if uint16(k) != n {
			t.Errorf("%s is kind %d; hello and error must keep their numbers in every version", k, uint16(k))
		}
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		kind    Kind
		payload string
	}{
		{KindHello, `{"version":1,"auth":true}`},
		{KindSpec, `{"op":"write","sizes":[2,64,4096],"iters":10000}`},
		{KindReady, ``},
		{KindStart, `null`},
		{KindResult, `"` + strings.Repeat("x", 1000) + `"`},
		{KindBye, `{}`},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			enc := appendFrame(nil, Version, tc.kind, []byte(tc.payload))
			f, n, err := readFrame(bytes.NewReader(enc), Version, DefaultMaxPayload, "peer")
			if err != nil {
				t.Fatal(err)
			}
			if n != len(enc) || f.kind != tc.kind || f.version != Version || string(f.payload) != tc.payload {
				t.Errorf("got kind %s version %d payload %q after %d bytes, want %s %d %q after %d",
					f.kind, f.version, f.payload, n, tc.kind, Version, tc.payload, len(enc))
			}
		})
	}
}

func TestReadFrameErrors(t *testing.T) {
	const limit = 1024
	newerHello := `{"version":2,"software":"rdmarun v9.0.0"}`
	newerError := `{"code":"version","message":"speak 2"}`
	for _, tc := range []struct {
		name    string
		in      []byte
		want    []string // substrings of the error
		proto   bool     // a *ProtocolError
		version bool     // wraps ErrVersion
		unknown bool     // wraps ErrUnknownKind: the payload was skipped
		partial bool     // a *partialError wrapping io.ErrUnexpectedEOF
		n       int      // bytes consumed
	}{
		{name: "empty", in: nil, want: []string{"EOF"}},
		{name: "short header", in: []byte("RDM"), want: []string{"in the middle of a frame header (3 of 12 bytes)"}, partial: true, n: 3},
		{name: "header cut after magic", in: []byte("RDMR\x00\x01"), want: []string{"in the middle of a frame header (6 of 12 bytes)"}, partial: true, n: 6},
		{name: "HTTP GET", in: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), proto: true, n: 4,
			want: []string{`frame from peer has magic 0x47455420 ("GET "), not an rdmarun control frame`, "looks like HTTP (is something else listening on this port?)"}},
		{name: "HTTP reply", in: []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), proto: true, n: 4, want: []string{`("HTTP")`, "looks like HTTP"}},
		{name: "TLS client hello", in: []byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), proto: true, n: 4,
			want: []string{"start of a TLS handshake, so the peer uses TLS and this end does not"}},
		{name: "SSH", in: []byte("SSH-2.0-OpenSSH_9.2\r\n"), proto: true, n: 4, want: []string{"looks like SSH"}},
		{name: "zeros", in: make([]byte, 16), proto: true, n: 4, want: []string{`magic 0x00000000 ("\x00\x00\x00\x00"), not an rdmarun control frame (is something else listening on this port?)`}},
		{name: "newer hello", in: rawFrame(2, KindHello, newerHello), proto: true, version: true, n: 12 + len(newerHello),
			want: []string{"frame from peer speaks control protocol version 2, this end speaks 1; both ends need the same rdmarun release line (the peer runs rdmarun v9.0.0)"}},
		{name: "newer error", in: rawFrame(2, KindError, newerError), proto: true, version: true, n: 12 + len(newerError),
			want: []string{"version 2, this end speaks 1", "(the peer said: speak 2)"}},
		{name: "older spec", in: rawFrame(0, KindSpec, `{}`), proto: true, version: true, n: 12,
			want: []string{"version 0, this end speaks 1; both ends need the same rdmarun release line"}},
		{name: "kind 0", in: rawFrame(1, 0, `{}`), proto: true, unknown: true, n: 14, want: []string{"unknown message kind 0"}},
		{name: "kind 999", in: rawFrame(1, 999, `{}`), proto: true, unknown: true, n: 14, want: []string{"unknown message kind 999"}},
		{name: "kind 999 empty", in: rawFrame(1, 999, ``), proto: true, n: 12, want: []string{"unknown message kind 999"}},
		{name: "kind 999 cut", in: append(header("RDMR", 1, 999, 10), `{"`...), partial: true, n: 14, want: []string{"in the middle of a kind(999) frame (14 of 22 bytes)"}},
		{name: "kind 999 over the limit", in: header("RDMR", 1, 999, limit+1), proto: true, n: 12, want: []string{"unknown message kind 999"}},
		{name: "4 GiB", in: header("RDMR", 1, KindSpec, 1<<32-1), proto: true, n: 12,
			want: []string{"spec frame from peer declares a 4294967295-byte payload, over the 1024-byte limit"}},
		{name: "limit plus one", in: header("RDMR", 1, KindResult, limit+1), proto: true, n: 12, want: []string{"declares a 1025-byte payload"}},
		{name: "payload cut", in: header("RDMR", 1, KindSpec, 10)[:12:12], partial: true, n: 12, want: []string{"in the middle of a spec frame (12 of 22 bytes)"}},
		{name: "payload cut later", in: append(header("RDMR", 1, KindSpec, 10), `{"a":`...), partial: true, n: 17, want: []string{"spec frame (17 of 22 bytes)"}},
		{name: "bad JSON", in: rawFrame(1, KindSpec, `{"a":1,}`), proto: true, n: 20, want: []string{`spec frame from peer carries a payload that is not valid JSON: "{\"a\":1,}"`}},
		{name: "long bad JSON", in: rawFrame(1, KindSpec, strings.Repeat("[", 100)), proto: true, n: 112, want: []string{`not valid JSON: "[[[[`, `[[["...`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := readFrame(bytes.NewReader(tc.in), Version, limit, "peer")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			var pe *ProtocolError
			if errors.As(err, &pe) != tc.proto {
				t.Errorf("error %T %v: ProtocolError %v, want %v", err, err, !tc.proto, tc.proto)
			}
			if errors.Is(err, ErrVersion) != tc.version {
				t.Errorf("errors.Is(%v, ErrVersion) != %v", err, tc.version)
			}
			if errors.Is(err, ErrUnknownKind) != tc.unknown {
				t.Errorf("errors.Is(%v, ErrUnknownKind) != %v", err, tc.unknown)
			}
			var part *partialError
			if errors.As(err, &part) != tc.partial || (tc.partial && !errors.Is(err, io.ErrUnexpectedEOF)) {
				t.Errorf("error %T %v: partial %v, want %v wrapping io.ErrUnexpectedEOF", err, err, !tc.partial, tc.partial)
			}
			if n != tc.n {
				t.Errorf("consumed %d bytes, want %d", n, tc.n)
			}
		})
	}
}

// A declared length is checked before anything is allocated for it.
func TestReadFrameOversizeDoesNotAllocate(t *testing.T) {
	in := header("RDMR", Version, KindResult, 1<<32-1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, n, err := readFrame(bytes.NewReader(in), Version, DefaultMaxPayload, "peer")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "declares a 4294967295-byte payload, over the 1048576-byte limit") {
		t.Fatalf("got %v, want the oversize error", err)
	}
	if n != headerSize {
		t.Errorf("read %d bytes, want only the %d-byte header", n, headerSize)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("allocated %d bytes for a rejected frame", d)
	}
}

// Kinds added within version 1 keep their numbers: builds of the same
// version read them by number.
func TestKindNumbers(t *testing.T) {
	if KindDone != 13 || KindRelay != 14 || KindRelayOK != 15 || KindRelayResult != 16 {
		t.Errorf("done, relay, relay-ok, relay-result are %d %d %d %d, want 13 14 15 16", KindDone, KindRelay, KindRelayOK, KindRelayResult)
	}
	if KindDoctor != 17 || KindDoctorReport != 18 {
		t.Errorf("doctor, doctor-report are %d %d, want 17 18", KindDoctor, KindDoctorReport)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{
		KindHello: "hello", KindError: "error", KindChallenge: "challenge", KindAuth: "auth",
		KindAuthOK: "auth-ok", KindSpec: "spec", KindSpecOK: "spec-ok", KindEndpoints: "endpoints",
		KindReady: "ready", KindStart: "start", KindResult: "result", KindBye: "bye", KindDone: "done",
		KindRelay: "relay", KindRelayOK: "relay-ok", KindRelayResult: "relay-result",
		KindDoctor: "doctor", KindDoctorReport: "doctor-report",
		0: "kind(0)", kindEnd: "kind(19)", 65535: "kind(65535)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint16(k), got, want)
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	const limit = 256
	f.Add(rawFrame(1, KindHello, `{"version":1,"auth":true}`))
	f.Add(rawFrame(1, KindReady, ``))
	f.Add(rawFrame(2, KindHello, `{"version":2,"software":"x"}`))
	f.Add(rawFrame(2, KindError, `{"message":"x"}`))
	f.Add(rawFrame(1, KindSpec, `{"a":[1,2,{"b":null}]}`))
	f.Add(header("RDMR", 1, KindSpec, 1<<32-1))
	f.Add(header("RDMR", 1, KindSpec, limit+1))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"))
	f.Add([]byte("RDMR"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, n, err := readFrame(bytes.NewReader(data), Version, limit, "fuzz")
		if n > len(data) || n > headerSize+limit {
			t.Fatalf("consumed %d bytes of %d (limit %d)", n, len(data), limit)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(fr.payload) > limit || !fr.kind.known() || fr.version != Version {
			t.Fatalf("accepted frame kind %d version %d with %d-byte payload", fr.kind, fr.version, len(fr.payload))
		}
		if re := appendFrame(nil, fr.version, fr.kind, fr.payload); !bytes.Equal(re, data[:n]) {
			t.Fatalf("re-encoded %x, read %x", re, data[:n])
		}
		if len(fr.payload) > 0 {
			var v any
			if err := json.Unmarshal(fr.payload, &v); err != nil {
				t.Fatalf("accepted payload %q that does not decode: %v", fr.payload, err)
			}
		}
	})
}
