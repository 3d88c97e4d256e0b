package peer

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// The relay request's field names are read by other builds of the same
// relay version: they may be added to, never renamed.
func TestRelayMsgEncoding(t *testing.T) {
	gid := 3
	in := relayMsg{Version: RelayVersion, Spec: rdma.TestSpec{Op: rdma.OpWrite, Iterations: 7}, Device: "rxe1",
		Peer: relayPeer{Addr: "10.0.0.1:18520", Device: "rxe0", GIDIndex: &gid}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version":1`, `"device":"rxe1"`, `"peer":{"addr":"10.0.0.1:18520","device":"rxe0","gid_index":3}`, `"iterations":7`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s\nlacks %s", b, want)
		}
	}
	var out relayMsg
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Peer.Addr != in.Peer.Addr || *out.Peer.GIDIndex != 3 || out.Spec.Iterations != 7 || out.Device != "rxe1" {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
	f := relayFailureOf("b:1", &Error{Addr: "b:1", Stage: StageConnecting, Err: errors.New("refused")})
	if f.Stage != StageConnecting || f.Addr != "b:1" || !f.Unreachable || f.Msg != "refused" {
		t.Errorf("failure of an unreachable B: %+v", f)
	}
	e := &RelayedError{Via: "a:1", Addr: f.Addr, Stage: f.Stage, Msg: f.Msg, Unreachable: f.Unreachable}
	if !errors.Is(e, ErrUnreachable) || errors.Is(e, ctrl.ErrPeerTimeout) || e.Error() != "responder a:1, relaying the test: responder b:1, connecting: refused" {
		t.Errorf("RelayedError %q", e)
	}
}

func TestRelayAddr(t *testing.T) {
	for in, want := range map[string]string{"h": "h:" + ctrl.DefaultPort, "h:1": "h:1", "[::1]:2": "[::1]:2", "": "", ":5": ""} {
		got, err := relayAddr(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("relayAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// startServer serves on loopback until the test ends.
func startServer(t *testing.T, cfg ServerConfig) (string, *Server) {
	t.Helper()
	return startServerOn(t, "127.0.0.1", cfg)
}

func startServerOn(t *testing.T, host string, cfg ServerConfig) (string, *Server) {
	t.Helper()
	cfg.Device = "none"
	return serve(t, host, cfg, nil)
}

// serve runs a responder with cfg on a free port of host until the test
// ends, with TLS when tlsCfg is set; the test fails if it does not stop
// cleanly.
func serve(t *testing.T, host string, cfg ServerConfig, tlsCfg *tls.Config) (string, *Server) {
	t.Helper()
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ctrl.Listen(net.JoinHostPort(host, "0"), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String(), srv
}

func dialServer(t *testing.T, addr, token string) *ctrl.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := ctrl.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctrl.Client(ctx, nc, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A request the responder cannot serve is answered with an error that
// names the versions, within a step, never with a hang.
func TestRelayVersionErrors(t *testing.T) {
	addr, _ := startServer(t, ServerConfig{Token: "fleet"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	c := dialServer(t, addr, "fleet")
	if err := c.Send(ctx, ctrl.KindRelay, relayMsg{Version: RelayVersion + 1, Peer: relayPeer{Addr: "127.0.0.1:1"}}); err != nil {
		t.Fatal(err)
	}
	err := c.Recv(ctx, ctrl.KindRelayOK, nil)
	var re *ctrl.RemoteError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "relay request version 2; this responder speaks relay version 1") {
		t.Errorf("a newer relay request: %v, want the responder's error naming both versions", err)
	}

	// A kind of a newer build: the responder reads the frame whole and
	// says which version it speaks.
	c = dialServer(t, addr, "fleet")
	frame := append([]byte("RDMR"), 0, byte(ctrl.Version), 0x03, 0xe7)
	frame = binary.BigEndian.AppendUint32(frame, 2)
	if _, err := c.NetConn().Write(append(frame, "{}"...)); err != nil {
		t.Fatal(err)
	}
	err = c.Recv(ctx, ctrl.KindRelayOK, nil)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "this responder speaks control protocol version 1 and does not know the request") || !strings.Contains(err.Error(), "kind 999") {
		t.Errorf("an unknown kind: %v, want the responder's error naming its version and the kind", err)
	}
}

// The coordinator's hop needs the token as a test does.
func TestRunViaWrongToken(t *testing.T) {
	addr, _ := startServer(t, ServerConfig{Token: "fleet"})
	spec, err := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Iterations: 10}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = RunVia(context.Background(), ClientConfig{Addr: addr, Token: "other", StepTimeout: 2 * time.Second}, Remote{Addr: "127.0.0.1:1"}, spec)
	var pe *Error
	if !errors.Is(err, ctrl.ErrAuth) || !errors.Is(err, ErrUnreachable) || !errors.As(err, &pe) || pe.Stage != StageHandshake {
		t.Errorf("wrong token: %v, want an auth error at the handshake", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("refused after %v", d)
	}
}

func TestRelayWait(t *testing.T) {
	step := time.Second
	for _, tc := range []struct {
		spec   rdma.TestSpec
		within time.Duration
		want   time.Duration
	}{
		{rdma.TestSpec{Op: rdma.OpSend, Duration: rdma.Duration(3 * time.Second), StallTimeout: rdma.Duration(2 * time.Second)}, 10 * time.Minute, 8*step + 3*time.Second + 2*24*time.Second}, // a drain may take the stall limit, 12 stall timeouts
		{rdma.TestSpec{Op: rdma.OpSend, Iterations: 1000}, time.Minute, time.Minute + 2*step},
		{rdma.TestSpec{Op: rdma.OpSend, Duration: rdma.Duration(time.Hour)}, time.Minute, time.Minute + 2*step},
	} {
		spec, err := tc.spec.Complete()
		if err != nil {
			t.Fatal(err)
		}
		if got := relayWait(spec, step, tc.within); got != tc.want {
			t.Errorf("%s within %v: %v, want %v", spec, tc.within, got, tc.want)
		}
	}
}

// bucketCount is how many samples buckets hold.
func bucketCount(buckets []rdma.Bucket) uint64 {
	var n uint64
	for _, b := range buckets {
		n += b.Count
	}
	return n
}

// A relayed latency result keeps its samples: its buckets travel in its
// JSON, and one whose buckets do not hold the samples its summary counts
// is refused.
func TestRelayResultKeepsSamples(t *testing.T) {
	buckets := []rdma.Bucket{{Ns: 1500, Count: 1}, {Ns: 1600, Count: 2}, {Ns: 90000, Count: 1}}
	in := &rdma.Result{Latency: &rdma.LatencyStats{RTT: rdma.Summary{Count: 4, P50: 1600}, Buckets: buckets}}
	b, err := json.Marshal(relayResultMsg{Result: in})
	if err != nil {
		t.Fatal(err)
	}
	var back relayResultMsg
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	out, err := back.result()
	if err != nil {
		t.Fatal(err)
	}
	if l := out.Latency; !reflect.DeepEqual(l.Buckets, buckets) || l.RTT.P50 != 1600 {
		t.Errorf("after the trip: %+v, want buckets %v", l, buckets)
	}
	for _, tc := range []struct {
		name    string
		buckets []rdma.Bucket
		want    string
	}{
		{name: "a sample missing", buckets: buckets[1:], want: "the latency buckets hold 3 samples, the summary 4"},
		{name: "no buckets", want: "the latency buckets hold 0 samples, the summary 4"},
		{name: "a sample too many", buckets: append([]rdma.Bucket{{Ns: 1, Count: 1}}, buckets...), want: "more samples than the summary's 4"},
		{name: "counts past 2^64 together", buckets: []rdma.Bucket{{Ns: 1, Count: 1 << 63}, {Ns: 2, Count: 1 << 63}, {Ns: 3, Count: 4}}, want: "more samples than the summary's 4"},
	} {
		back.Result.Latency.Buckets = tc.buckets
		if _, err := back.result(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	back.Result.Latency.RTT.Count = -1
	if _, err := back.result(); err == nil || !strings.Contains(err.Error(), "counts -1 samples") {
		t.Errorf("a negative count: %v", err)
	}
}

// FuzzRelayResult: whatever A sends back, reading it returns a result or
// an error, never a panic, and a latency result it returns has buckets
// that hold the samples its summary counts.
func FuzzRelayResult(f *testing.F) {
	good, err := json.Marshal(relayResultMsg{Result: &rdma.Result{Latency: &rdma.LatencyStats{RTT: rdma.Summary{Count: 1}, Buckets: []rdma.Bucket{{Ns: 1234, Count: 1}}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"result":{"latency":{"rtt":{"count":1},"buckets":[[5,1]]}}}`))
	f.Add([]byte(`{"result":{"latency":{"rtt":{"count":2},"buckets":[[-1,1],[70000000000,1]]}}}`))
	f.Add([]byte(`{"result":{"latency":{"rtt":{"count":3},"buckets":[[1,9223372036854775807],[2,9223372036854775807],[3,3]]}}}`))
	f.Add([]byte(`{"result":{"latency":{"rtt":{"count":1}}},"samples":[[5,1]]}`))
	f.Add([]byte(`{"error":{"stage":"connecting","message":"x","unreachable":true}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m relayResultMsg
		if json.Unmarshal(b, &m) != nil {
			return
		}
		res, err := m.result()
		if err == nil && res.Latency != nil && bucketCount(res.Latency.Buckets) != uint64(res.Latency.RTT.Count) {
			t.Errorf("accepted buckets of %d samples for a summary of %d", bucketCount(res.Latency.Buckets), res.Latency.RTT.Count)
		}
	})
}

// nonLoopback is an address of this host that is not loopback.
func nonLoopback(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("this host has no non-loopback IPv4 address")
	return ""
}

// A responder without a token does not dial out for a client on the
// network unless its operator allowed unauthenticated use; allowed, the
// relay goes on, and a failure on A's own side comes back typed.
func TestRelayUnauthenticated(t *testing.T) {
	host := nonLoopback(t)
	spec, err := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Iterations: 10}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(addr string) ClientConfig {
		return ClientConfig{Addr: addr, StepTimeout: 2 * time.Second}
	}
	closed, _ := startServerOn(t, host, ServerConfig{})
	_, err = RunVia(context.Background(), cfg(closed), Remote{Addr: "127.0.0.1:1"}, spec)
	var pe *Error
	if !errors.As(err, &pe) || pe.Stage != StageRelayRequest || !strings.Contains(err.Error(), "relays tests only for authenticated clients") ||
		!strings.Contains(err.Error(), "or allow unauthenticated clients (--allow-unauthenticated)") {
		t.Errorf("unauthenticated relay from the network: %v, want the responder's refusal", err)
	}
	open, _ := startServerOn(t, host, ServerConfig{RelayUnauthenticated: true})
	_, err = RunVia(context.Background(), cfg(open), Remote{Addr: "127.0.0.1:1"}, spec)
	var re *RelayedError
	// The device "none" does not exist: A's own side fails before it
	// dials B.
	if !errors.As(err, &re) || re.Stage != "" || errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "relaying the test: its own side failed") {
		t.Errorf("allowed relay with no device: %v, want a RelayedError of A's own side", err)
	}
}
