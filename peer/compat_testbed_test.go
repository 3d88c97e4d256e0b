//go:build testbed

package peer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// rewrite changes the payload of a control frame on its way; it returns
// the payload to send on.
type rewrite func(kind ctrl.Kind, payload []byte) []byte

// frameProxy listens on 10.0.0.2 and passes every connection's control
// frames to target, through toServer and toClient: a client or a
// responder of another build, played by rewriting what the current ones
// send. Without TLS the frames are plain on the wire.
func frameProxy(t *testing.T, target string, toServer, toClient rewrite) string {
	t.Helper()
	ln, err := net.Listen("tcp", "10.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			sc, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				cc.Close()
				continue
			}
			wg.Add(2)
			pass := func(dst, src net.Conn, f rewrite) {
				defer wg.Done()
				defer dst.Close()
				defer src.Close()
				for {
					hdr := make([]byte, 12)
					if _, err := io.ReadFull(src, hdr); err != nil {
						return
					}
					payload := make([]byte, binary.BigEndian.Uint32(hdr[8:]))
					if _, err := io.ReadFull(src, payload); err != nil {
						return
					}
					payload = f(ctrl.Kind(binary.BigEndian.Uint16(hdr[6:])), payload)
					binary.BigEndian.PutUint32(hdr[8:], uint32(len(payload)))
					if _, err := dst.Write(append(hdr, payload...)); err != nil {
						return
					}
				}
			}
			go pass(sc, cc, toServer)
			go pass(cc, sc, toClient)
		}
	}()
	return ln.Addr().String()
}

func unchanged(_ ctrl.Kind, p []byte) []byte { return p }

// TestOlderClient: the spec message of a client from before sessions,
// byte for byte as that build wrote it (testdata), gets a working test
// from the current responder: one run, no session.
func TestOlderClient(t *testing.T) {
	older, err := os.ReadFile("testdata/spec-before-sessions.json")
	if err != nil {
		t.Fatal(err)
	}
	older = bytes.TrimSpace(older)
	r := startResponder(t)
	var mu sync.Mutex
	var sent []byte
	addr := frameProxy(t, r.addr, func(k ctrl.Kind, p []byte) []byte {
		if k != ctrl.KindSpec {
			return p
		}
		mu.Lock()
		sent = p
		mu.Unlock()
		return older
	}, unchanged)
	cfg := client(r)
	cfg.Addr = addr
	cfg.SkipPortCounters = true
	// The golden's test is the exporter's default probe, so both ends
	// set up the same one; this client asks for a session and no
	// counters, which the older message does not carry. That build's
	// latency runs signaled every send WR, and its message says so;
	// its default ACK timeout was 14.
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Iterations: 10, CQModeration: 1,
		QP: rdma.QPSettings{Timeout: new(14)}})
	s, err := peer.Dial(context.Background(), cfg, spec, time.Minute)
	if err != nil {
		t.Fatalf("an older client's spec: %v\n%s", err, r.output())
	}
	defer s.Close()
	mu.Lock()
	defer mu.Unlock()
	var mine, theirs struct {
		Spec json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(sent, &mine) != nil || json.Unmarshal(older, &theirs) != nil || !bytes.Equal(mine.Spec, theirs.Spec) {
		t.Fatalf("the golden's spec is not the probe's:\n%s\n%s", theirs.Spec, mine.Spec)
	}
	if bytes.Equal(sent, older) {
		t.Fatal("the current client sent the older message itself: the test tests nothing")
	}
	if s.Idle() != 0 {
		t.Errorf("the responder kept a session for a client that did not ask (%v)", s.Idle())
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, r.output())
	}
	rdmatest.CheckResult(t, res)
}

// TestResponderIgnoresKeep: a responder from before sessions answers
// spec-ok without keep_ms; a current client that asked for a session
// runs once per connection, and again on a new one.
func TestResponderIgnoresKeep(t *testing.T) {
	r := startResponder(t)
	base := qpsOn(t, "rxe0")
	addr := frameProxy(t, r.addr, unchanged, func(k ctrl.Kind, p []byte) []byte {
		if k != ctrl.KindSpecOK {
			return p
		}
		var ok map[string]any
		if err := json.Unmarshal(p, &ok); err != nil {
			t.Errorf("spec-ok %s: %v", p, err)
			return p
		}
		delete(ok, "keep_ms")
		b, _ := json.Marshal(ok)
		return b
	})
	cfg := client(r)
	cfg.Addr = addr
	for i := range 2 {
		s, err := peer.Dial(context.Background(), cfg, probeSpec(t), time.Minute)
		if err != nil {
			t.Fatalf("connection %d: %v\n%s", i+1, err, r.output())
		}
		if s.Idle() != 0 {
			t.Errorf("kept for %v by a responder that said nothing of keeping", s.Idle())
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatalf("connection %d: run: %v\n%s", i+1, err, r.output())
		}
		rdmatest.CheckResult(t, res)
		if _, err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "for one run only") {
			t.Errorf("a second run on the connection: %v, want the session refused as one run", err)
		}
		s.Close()
	}
	// The responder, which had granted the session, ended it on the
	// client's bye.
	waitQPs(t, "rxe0", base, "after both connections")
}
