//go:build testbed

// These tests run inside the soft-RoCE VM (make testbed-test): a real
// `rdmarun serve` process answers on rxe0 (10.0.0.1), and the client side
// runs here on rxe1. RDMARUN_BIN names the rdmarun binary. Faults are
// injected for real: the link goes down, the responder is killed, netem
// drops packets.
package peer_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"

	"github.com/rdmarun/rdmarun/internal/netfault"

	"github.com/rdmarun/rdmarun/internal/testcert"
)

// responder is a running `rdmarun serve`.
type responder struct {
	addr string
	cm   string // host:port of its CM listener, unless started with --no-cm or --cm-port
	cmd  *exec.Cmd
	log  *os.File
}

var nextPort = 18600

// startResponder starts `rdmarun serve` on rxe0, listening on 10.0.0.1,
// and waits until it listens. Without a --token-file in args it serves
// unauthenticated, as the operator's explicit choice.
func startResponder(t *testing.T, args ...string) *responder {
	t.Helper()
	if !slices.Contains(args, "--token-file") {
		args = append(args, "--allow-unauthenticated")
	}
	return startResponderAt(t, "10.0.0.1", args...)
}

// startResponderAt starts `rdmarun serve` on rxe0 with its control
// channel on host, and waits until it listens.
func startResponderAt(t *testing.T, host string, args ...string) *responder {
	t.Helper()
	return startServe(t, host, "rxe0", args...)
}

// startServe starts `rdmarun serve` on device with its control channel
// on host, and waits until it listens.
func startServe(t *testing.T, host, device string, args ...string) *responder {
	t.Helper()
	bin := os.Getenv("RDMARUN_BIN")
	if bin == "" {
		t.Fatal("RDMARUN_BIN is not set (make testbed-test sets it)")
	}
	nextPort++
	addr := net.JoinHostPort(host, strconv.Itoa(nextPort))
	logf, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Each responder takes a CM port of its own beside its control port,
	// so that two at once do not contend for the default.
	cmPort := nextPort + 1000
	if !slices.Contains(args, "--cm-port") && !slices.Contains(args, "--no-cm") {
		args = append(args, "--cm-port", strconv.Itoa(cmPort))
	}
	cmd := exec.Command(bin, append([]string{"serve", "--device", device, "--listen", addr, "--log-level", "debug"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &responder{addr: addr, cmd: cmd, log: logf, cm: net.JoinHostPort(host, strconv.Itoa(cmPort))}
	t.Cleanup(func() { r.stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("rdmarun serve did not listen on %s: %v\n%s", addr, err, r.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *responder) output() string {
	b, _ := os.ReadFile(r.log.Name())
	return string(b)
}

func (r *responder) stop(t *testing.T) {
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
		t.Errorf("rdmarun serve did not stop on SIGINT within 15 s\n%s", r.output())
	}
}

func client(r *responder) peer.ClientConfig {
	return peer.ClientConfig{Addr: r.addr, Device: "rxe1", GIDIndex: rdma.AutoGIDIndex, StepTimeout: 5 * time.Second}
}

func run(t *testing.T, r *responder, spec rdma.TestSpec) *rdma.Result {
	t.Helper()
	res, err := peer.Run(context.Background(), client(r), rdmatest.Complete(t, spec))
	if err != nil {
		t.Fatalf("%s: %v\nresponder log:\n%s", spec, err, r.output())
	}
	rdmatest.CheckResult(t, res)
	if len(res.Sides) != 2 || res.Sides[1].Device != "rxe0" {
		t.Errorf("sides %+v, want the responder's rxe0 second", res.Sides)
	}
	return res
}

var allOps = []rdma.Op{rdma.OpSend, rdma.OpSendImm, rdma.OpWrite, rdma.OpWriteImm, rdma.OpRead, rdma.OpFetchAdd, rdma.OpCmpSwap}

// TestRemoteMatrix: every op x measure x mode through rdmarun serve in a
// second process, with data validation on both ends.
func TestRemoteMatrix(t *testing.T) {
	r := startResponder(t)
	for _, op := range allOps {
		for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth} {
			for _, mode := range []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent} {
				if op == rdma.OpWrite && m == rdma.MeasureLatency && mode == rdma.ModeEvent {
					continue // refused before anything runs; rdma's tests cover it
				}
				spec := rdma.TestSpec{Op: op, Measure: m, Mode: mode, Iterations: 100, Validate: true}
				if m == rdma.MeasureBandwidth && !op.Atomic() {
					spec.Size = 4096
				}
				t.Run(op.String()+"/"+m.String()+"/"+mode.String(), func(t *testing.T) { run(t, r, spec) })
			}
		}
	}
}

func TestRemoteQPsAndDuration(t *testing.T) {
	r := startResponder(t)
	for _, spec := range []rdma.TestSpec{
		{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Iterations: 100},
		{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Iterations: 100, QPs: 8, Threads: 2},
		{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 4096, Iterations: 100, QPs: 8, Threads: 2, Mode: rdma.ModeEvent, Validate: true},
		{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 4096, Duration: rdma.Duration(time.Second), QPs: 2, Bidirectional: true},
		{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Duration: rdma.Duration(time.Second)},
		{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Duration: rdma.Duration(time.Second), Mode: rdma.ModeEvent, QPs: 2},
	} {
		t.Run(fmt.Sprintf("%s/%s/qps%d/%v", spec.Op, spec.Measure, spec.QPs, time.Duration(spec.Duration)), func(t *testing.T) {
			res := run(t, r, spec)
			if spec.Duration > 0 && (res.Elapsed < time.Second || res.Elapsed > 3*time.Second) {
				t.Errorf("a 1 s run measured %v", res.Elapsed)
			}
		})
	}
}

// TestLongerThanAStep: a test that runs longer than the control
// channel's per-step timeout (10 s) must not be taken for a silent peer.
func TestLongerThanAStep(t *testing.T) {
	r := startResponder(t)
	res := run(t, r, rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Duration: rdma.Duration(12 * time.Second)})
	if res.Elapsed < 12*time.Second {
		t.Errorf("a 12 s run measured %v", res.Elapsed)
	}
}

// TestServeSurvivesMisbehaviour feeds the responder garbage, half-open and
// stalled connections and a wrong token, then checks that a correct client
// is still served.
func TestServeSurvivesMisbehaviour(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startResponder(t, "--token-file", tokenFile)
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", r.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Garbage: an HTTP request.
	c := dial()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = bufio.NewReader(c).ReadString('\n')
	c.Close()
	// Half-open: connect and leave without a word.
	dial().Close()
	// Stalled mid-frame: a header promising a payload that never comes.
	stalled := dial()
	_, _ = stalled.Write([]byte("RDMR\x00\x01\x00\x01\x00\x00\x00\x40"))
	defer stalled.Close()
	// A huge declared length.
	c = dial()
	_, _ = c.Write([]byte("RDMR\x00\x01\x00\x01\xff\xff\xff\xff"))
	c.Close()

	// Wrong token: a clear authentication error, quickly.
	cfg := client(r)
	cfg.Token = "wrong"
	start := time.Now()
	_, err := peer.Run(context.Background(), cfg, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10}))
	if !errors.Is(err, ctrl.ErrAuth) {
		t.Fatalf("wrong token: got %v, want ErrAuth", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("wrong token reported after %v", took)
	}
	t.Logf("wrong token: %v", err)

	// No token at all against a responder that has one.
	cfg.Token = ""
	if _, err := peer.Run(context.Background(), cfg, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10})); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("missing token: got %v", err)
	}

	// After all that, a correct client is served.
	cfg.Token = "s3cret"
	for range 3 {
		res, err := peer.Run(context.Background(), cfg, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Iterations: 50, Validate: true}))
		if err != nil {
			t.Fatalf("correct client after misbehaviour: %v\n%s", err, r.output())
		}
		rdmatest.CheckResult(t, res)
	}
	if r.cmd.ProcessState != nil {
		t.Fatal("rdmarun serve exited")
	}
}

// TestSilentResponder: something accepts the connection and never
// answers. The client must give up within its step deadline.
func TestSilentResponder(t *testing.T) {
	ln, err := net.Listen("tcp", "10.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	cfg := peer.ClientConfig{Addr: ln.Addr().String(), Device: "rxe1", GIDIndex: rdma.AutoGIDIndex, StepTimeout: 2 * time.Second}
	start := time.Now()
	_, err = peer.Run(context.Background(), cfg, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10}))
	took := time.Since(start)
	var pe *peer.Error
	if !errors.As(err, &pe) || pe.Stage != peer.StageHandshake {
		t.Fatalf("got %v, want a handshake error", err)
	}
	if took > 4*time.Second {
		t.Errorf("gave up after %v, want about 2 s", took)
	}
	t.Logf("after %v: %v", took, err)
}

// faultRun starts a long test, injects a fault after a second, and
// returns the error and how long after the fault it came.
func faultRun(t *testing.T, r *responder, spec rdma.TestSpec, inject func()) (time.Duration, error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := peer.Run(context.Background(), client(r), rdmatest.Complete(t, spec))
		done <- err
	}()
	// 1,000 packets: the QPs are connected and the transfer under way.
	netfault.WaitSending(t, 20*time.Second, "rxe1", 1000)
	inject()
	at := time.Now()
	select {
	case err := <-done:
		return time.Since(at), err
	case <-time.After(30 * time.Second):
		t.Fatal("the test did not end within 30 s of the fault")
		return 0, nil
	}
}

var faultSpec = rdma.TestSpec{
	Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Duration: rdma.Duration(20 * time.Second),
	StallTimeout: rdma.Duration(5 * time.Second), QP: rdma.QPSettings{RetryCnt: new(3), Timeout: new(14)},
}

// TestLinkDown: the veth goes down mid-test. retry_cnt 3 with timeout 14
// ends the QP with RETRY_EXC_ERR in about 3.4 s on rxe; the engine's own
// stall deadline (5 s) is the backstop. rxe may instead fail a request it
// is sending as the link goes down, at once, with LOC_QP_OP_ERR (seen
// 0.1 ms after link down, in a run on a loaded host).
func TestLinkDown(t *testing.T) {
	r := startResponder(t)
	after, err := faultRun(t, r, faultSpec, func() { netfault.IP(t, "link", "set", "veth1", "down") })
	netfault.IP(t, "link", "set", "veth1", "up")
	netfault.WaitActive(t, 15*time.Second, "rxe0", "rxe1")
	var ce *rdma.CompletionError
	var se *rdma.StallError
	switch {
	case errors.As(err, &ce):
		if ce.Status != rdma.WCRetryExcErr && ce.Status != rdma.WCLocQPOpErr {
			t.Errorf("completion status %s, want RETRY_EXC_ERR (or LOC_QP_OP_ERR)", ce.Status)
		}
	case errors.As(err, &se):
	default:
		t.Fatalf("got %v, want a completion error or a stall", err)
	}
	if after > 8*time.Second {
		t.Errorf("error came %v after the link went down", after)
	}
	t.Logf("%v after link down: %v", after, err)
	// The responder is still there for the next test.
	run(t, r, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 50})
}

// TestLossAll: netem drops every packet on the data path; with retry_cnt 3
// and timeout 14 rxe reports RETRY_EXC_ERR within about half a second.
func TestLossAll(t *testing.T) {
	r := startResponder(t)
	after, err := faultRun(t, r, faultSpec, func() { netfault.TC(t, "qdisc", "add", "dev", "veth1", "root", "netem", "loss", "100%") })
	netfault.TC(t, "qdisc", "del", "dev", "veth1", "root")
	var ce *rdma.CompletionError
	var se *rdma.StallError
	if !errors.As(err, &ce) && !errors.As(err, &se) {
		t.Fatalf("got %v, want a completion error or a stall", err)
	}
	if after > 8*time.Second {
		t.Errorf("error came %v after the loss began", after)
	}
	// Nothing reached the peer, so it sent no NAK: a silent path is not
	// reported as a lossy one.
	if ce != nil && ce.Loss != nil || se != nil && se.Loss != nil || strings.Contains(err.Error(), "path is dropping packets") {
		t.Errorf("100%% loss reported as a lossy path that answers: %v", err)
	}
	t.Logf("%v after 100%% loss: %v", after, err)
}

// TestLossNamed: a path that drops 5% of packets is lossy, not dead. At
// the default retry_cnt 6, 64 KiB writes on 4 QPs exhaust rxe's retries
// in most runs (rxe counts every NAK against retry_cnt until a positive
// ACK; make loss-compare measured 6 failures in 6 runs, perftest's retry
// forever 6 passes). Whether the run ends so or completes, the port's
// sequence errors are reported, and an error names the loss, never a
// peer that did not acknowledge.
func TestLossNamed(t *testing.T) {
	r := startResponder(t)
	netfault.TC(t, "qdisc", "add", "dev", "veth1", "root", "netem", "loss", "5%")
	defer netfault.TC(t, "qdisc", "del", "dev", "veth1", "root")
	spec := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Mode: rdma.ModeEvent, Size: 65536, Iterations: 100, QPs: 4}
	res, err := peer.Run(context.Background(), client(r), rdmatest.Complete(t, spec))
	if err == nil {
		c := res.Sides[0].Counters.Categories
		if c == nil || c.Values[portstats.SeqErrors] == 0 {
			t.Errorf("the run completed through 5%% loss but counted no sequence error: %+v", res.Sides[0].Counters)
		}
		t.Logf("completed through 5%% loss: requester counters %v", res.Sides[0].Counters.HWCounters)
		return
	}
	var ce *rdma.CompletionError
	var se *rdma.StallError
	var loss *rdma.PathLoss
	switch {
	case errors.As(err, &ce):
		loss = ce.Loss
	case errors.As(err, &se):
		loss = se.Loss
	default:
		t.Fatalf("got %v, want a completion error or a stall", err)
	}
	if loss == nil || loss.SeqErrors == 0 {
		t.Errorf("the error carries no loss evidence: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "did not acknowledge") || strings.Contains(msg, "peer gone") || !strings.Contains(msg, "path is dropping packets") {
		t.Errorf("a lossy path reported as something else: %v", err)
	}
	t.Logf("5%% loss: %v", err)
}

// TestLossSome: 5% loss slows the test but it completes, and the retry
// counters moved.
func TestLossSome(t *testing.T) {
	r := startResponder(t)
	netfault.TC(t, "qdisc", "add", "dev", "veth1", "root", "netem", "loss", "5%")
	defer netfault.TC(t, "qdisc", "del", "dev", "veth1", "root")
	res := run(t, r, rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Iterations: 300, QP: rdma.QPSettings{RetryCnt: new(7)}, StallTimeout: rdma.Duration(20 * time.Second)})
	moved := res.Sides[0].Counters.HWCounters["completer_retry_err"] + res.Sides[0].Counters.HWCounters["rcvd_seq_err"] +
		res.Sides[1].Counters.HWCounters["out_of_seq_request"] + res.Sides[1].Counters.HWCounters["duplicate_request"]
	if moved == 0 {
		t.Errorf("5%% loss moved no retry counter: %+v", res.Sides)
	}
	t.Logf("retry-related counter deltas: requester %v, responder %v", res.Sides[0].Counters.HWCounters, res.Sides[1].Counters.HWCounters)
}

// TestResponderKilled: the responder process dies mid-test. The broken
// control channel ends the client's side at once.
func TestResponderKilled(t *testing.T) {
	r := startResponder(t)
	after, err := faultRun(t, r, faultSpec, func() { _ = r.cmd.Process.Kill() })
	_ = r.cmd.Wait()
	if err == nil {
		t.Fatal("no error after the responder was killed")
	}
	if after > 8*time.Second {
		t.Errorf("error came %v after the kill", after)
	}
	// A killed peer can leave a NAK behind (seen: 1 with 5 retransmits);
	// that is no lossy path.
	if strings.Contains(err.Error(), "path is dropping packets") {
		t.Errorf("a killed responder reported as a lossy path: %v", err)
	}
	t.Logf("%v after kill: %v", after, err)
}

// TestGIDTypeMismatch: a peer that announces a RoCE v1 GID where this end
// uses v2 is refused before any QP moves.
func TestGIDTypeMismatch(t *testing.T) {
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite})
	ep, err := rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: "rxe1", GIDIndex: rdma.AutoGIDIndex}))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	fake := ep.Info()
	fake.Device, fake.GIDType = "mlx5_0", rdma.GIDTypeRoCEv1
	err = ep.Connect(fake, spec.QP)
	if err == nil || !strings.Contains(err.Error(), "GID types differ: rxe1 uses RoCEv2") {
		t.Fatalf("got %v", err)
	}
}

// TestTLS: a responder serving TLS with a token answers a client that
// trusts its certificate, and refuses a plain one with a clear error.
func TestTLS(t *testing.T) {
	cert, key := testcert.Write(t, "10.0.0.1")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tls-and-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startResponder(t, "--tls-cert", cert, "--tls-key", key, "--token-file", tokenFile)
	tlsCfg, err := ctrl.TLSConfig{CAFile: cert}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg := client(r)
	cfg.TLS, cfg.Token = tlsCfg, "tls-and-token"
	res, err := peer.Run(context.Background(), cfg, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Iterations: 50, Validate: true}))
	if err != nil {
		t.Fatalf("over TLS: %v\n%s", err, r.output())
	}
	rdmatest.CheckResult(t, res)

	plain := client(r)
	plain.Token = "tls-and-token"
	_, err = peer.Run(context.Background(), plain, rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpSend, Iterations: 10}))
	if err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("plain client to a TLS responder: got %v, want an error naming TLS", err)
	}
	t.Logf("plain client: %v", err)
}

// TestServeSecureDefaults: a responder on a network address without a
// token refuses to start; the operator's --allow-unauthenticated starts it
// with a warning; on loopback no token is needed, and tests run.
func TestServeSecureDefaults(t *testing.T) {
	bin := os.Getenv("RDMARUN_BIN")
	if bin == "" {
		t.Fatal("RDMARUN_BIN is not set (make testbed-test sets it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--device", "rxe0", "--listen", "10.0.0.1:18599")
	cmd.Env = append(os.Environ(), ctrl.TokenEnv+"=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "refusing to serve: a responder on 10.0.0.1:18599 is reachable from the network") {
		t.Errorf("serve on 10.0.0.1 without a token: %v, want exit 3 and the refusal\n%s", err, out)
	}

	// The logs are read after a test has run: the warning is written
	// after the socket listens, so a connect alone could beat it.
	open := startResponder(t)
	run(t, open, rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Iterations: 100})
	if log := open.output(); !strings.Contains(log, "level=WARN msg=\"serving without authentication (--allow-unauthenticated)\"") {
		t.Errorf("--allow-unauthenticated: no warning at start\n%s", log)
	}

	local := startResponderAt(t, "127.0.0.1")
	run(t, local, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Iterations: 100, Validate: true})
	if log := local.output(); strings.Contains(log, "WARN") {
		t.Errorf("a loopback responder warned\n%s", log)
	}
}

// TestServeReloadsToken: SIGHUP makes the responder read its token file
// again (systemctl reload): the new token is served, the old refused; a
// file made empty keeps the token in force rather than turning
// authentication off.
func TestServeReloadsToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startResponder(t, "--token-file", tokenFile)
	spec := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Iterations: 50, Validate: true}
	withToken := func(token string) error {
		cfg := client(r)
		cfg.Token = token
		res, err := peer.Run(context.Background(), cfg, rdmatest.Complete(t, spec))
		if err == nil {
			rdmatest.CheckResult(t, res)
		}
		return err
	}
	if err := withToken("first"); err != nil {
		t.Fatalf("the first token: %v\n%s", err, r.output())
	}
	hangup := func(contents, logLine string) {
		t.Helper()
		if err := os.WriteFile(tokenFile, []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(r.output(), logLine); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log within 10 s of SIGHUP\n%s", logLine, r.output())
			}
		}
	}
	hangup("second\n", "SIGHUP: token reloaded")
	if err := withToken("second"); err != nil {
		t.Errorf("the new token: %v\n%s", err, r.output())
	}
	if err := withToken("first"); !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("the old token after reload: %v, want ErrAuth", err)
	}
	hangup("\n", "SIGHUP: keeping the old token")
	if err := withToken("second"); err != nil {
		t.Errorf("the token in force after an empty file: %v\n%s", err, r.output())
	}
	if r.cmd.ProcessState != nil {
		t.Fatal("rdmarun serve exited")
	}
}
