package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// askSpec sends spec as a client would and returns the responder's
// answer to it: nil for spec-ok.
func askSpec(t *testing.T, addr string, spec rdma.TestSpec) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := dialServer(t, addr, "")
	if err := c.Send(ctx, ctrl.KindSpec, specMsg{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	return c.Recv(ctx, ctrl.KindSpecOK, &specOKMsg{})
}

// Each limit refuses a test that passes it, before any RDMA resource is
// allocated (the responder's device does not even exist), naming the
// flag, what the test asked and what is allowed.
func TestAdmissionRefuses(t *testing.T) {
	addr, srv := startServer(t, ServerConfig{MaxMemory: 4 << 20, MaxQPs: 4, MaxTest: 20 * time.Second})
	for _, tc := range []struct {
		name string
		spec rdma.TestSpec
		want string
	}{
		{"qps", rdma.TestSpec{Op: rdma.OpWrite, QPs: 8},
			"responder refused: the test uses 8 QPs; the responder allows 4 per test (--max-qps)"},
		{"memory per test", rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 1 << 20, QPs: 4},
			"responder refused: the test registers 8MiB; the responder allows 4MiB per test and in total (--max-memory)"},
		{"duration", rdma.TestSpec{Op: rdma.OpWrite, Duration: rdma.Duration(30 * time.Second)},
			"responder refused: the test runs for 30s, plus up to 15s to drain and answer; the responder allows 20s per test (--max-test)"},
		// It would be cut off at its end, with its result lost.
		{"duration that fits only without draining", rdma.TestSpec{Op: rdma.OpWrite, Duration: rdma.Duration(19 * time.Second), StallTimeout: rdma.Duration(time.Second)},
			"responder refused: the test runs for 19s, plus up to 11s to drain and answer; the responder allows 20s per test (--max-test)"},
		{"the first limit passed is the one named", rdma.TestSpec{Op: rdma.OpWrite, Duration: rdma.Duration(time.Minute), QPs: 100, Threads: 1},
			"(--max-test)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := askSpec(t, addr, tc.spec)
			var re *ctrl.RemoteError
			if !errors.As(err, &re) || !strings.HasSuffix(re.Msg, tc.want) {
				t.Errorf("got %v\nwant the responder's error ending %q", err, tc.want)
			}
		})
	}
	// A test within every limit is admitted and fails only at its
	// endpoint (no device "none"); its booking is returned.
	err := askSpec(t, addr, rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 1 << 20, QPs: 2,
		Duration: rdma.Duration(5 * time.Second), StallTimeout: rdma.Duration(5 * time.Second)})
	if err == nil || strings.Contains(err.Error(), "responder refused") {
		t.Errorf("a test within the limits: %v, want the endpoint's failure", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for used, n := srv.memory.inUse(); used != 0 || n != 0; used, n = srv.memory.inUse() {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still booked by %d after the test failed", used, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The total is booked from admission to release: a test that fits alone
// but not beside the others is refused as one to retry, and fits again
// once they release.
// A responder embedded elsewhere (rdmarun_exporter's) names its own
// keys, which is what its operator can raise.
func TestAdmissionLimitKeys(t *testing.T) {
	keys := LimitKeys{Concurrent: "responder.max_concurrent", Memory: "responder.max_memory", QPs: "responder.max_qps", Test: "responder.max_test"}
	addr, _ := startServer(t, ServerConfig{MaxMemory: 4 << 20, MaxQPs: 4, LimitKeys: keys})
	for spec, want := range map[*rdma.TestSpec]string{
		{Op: rdma.OpWrite, QPs: 8}: "(responder.max_qps)",
		{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 1 << 20, QPs: 4}: "(responder.max_memory)",
		{Op: rdma.OpWrite, Duration: rdma.Duration(time.Hour)}:                    "(responder.max_test)",
	} {
		var re *ctrl.RemoteError
		if err := askSpec(t, addr, *spec); !errors.As(err, &re) || !strings.HasSuffix(re.Msg, want) {
			t.Errorf("%+v: got %v, want a refusal ending %q", *spec, err, want)
		}
	}
	if got := busyMessage(4, 4, time.Second, keys.Concurrent); !strings.Contains(got, "(responder.max_concurrent 4)") {
		t.Errorf("busy answer %q does not name responder.max_concurrent", got)
	}
}

func TestMemoryBudget(t *testing.T) {
	b := memoryBudget{max: 10 << 20}
	first, err := b.reserve(4<<20, "--max-memory")
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.reserve(4<<20, "--max-memory")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.reserve(4<<20, "--max-memory")
	var le *LimitError
	if !errors.As(err, &le) || !le.Retry || le.Limit != "--max-memory" ||
		err.Error() != "responder refused: the test registers 4MiB and 2 tests and kept sessions hold 8MiB; the responder allows 10MiB in total (--max-memory); retry when they end" {
		t.Errorf("past the total: %v", err)
	}
	if _, err := b.reserve(11<<20, "--max-memory"); !errors.As(err, &le) || le.Retry {
		t.Errorf("past the total alone: %v, want a refusal not worth retrying", err)
	}
	first()
	first() // twice: a release runs once
	if used, n := b.inUse(); used != 4<<20 || n != 1 {
		t.Errorf("after one release: %d bytes by %d, want 4MiB by 1", used, n)
	}
	third, err := b.reserve(6<<20, "--max-memory")
	if err != nil {
		t.Errorf("after a release: %v", err)
	} else {
		third()
	}
	second()
	if used, n := b.inUse(); used != 0 || n != 0 {
		t.Errorf("all released: %d bytes by %d", used, n)
	}
}

// A responder at MaxConcurrent answers at once with how many tests are
// under way and a retry hint taken from when the first should end; the
// client reads it as a *BusyError.
func TestBusyAnswer(t *testing.T) {
	addr, _ := startServer(t, ServerConfig{MaxConcurrent: 1, StepTimeout: 3 * time.Second})
	dialServer(t, addr, "") // holds the only slot, silent
	start := time.Now()
	err := askSpec(t, addr, rdma.TestSpec{Op: rdma.OpWrite})
	if d := time.Since(start); d >= 3*time.Second {
		t.Errorf("the busy answer took %v: it waited for the slot", d)
	}
	err = asBusy(err)
	var be *BusyError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BusyError", err)
	}
	// The holder is in its set-up, expected to end within its step.
	if be.Running != 1 || be.RetryAfter < time.Second || be.RetryAfter > 3*time.Second {
		t.Errorf("busy: %d running, retry after %v; want 1, 1s..3s", be.Running, be.RetryAfter)
	}
	if !strings.Contains(err.Error(), "responder busy: 1 tests under way (--max-concurrent 1); retry after ") {
		t.Errorf("the text an older client shows: %q", err)
	}
	if !errors.As(err, new(*ctrl.RemoteError)) {
		t.Errorf("%v does not unwrap to the responder's error", err)
	}
}

func TestParseBusy(t *testing.T) {
	for _, tc := range []struct {
		msg     string
		running int
		retry   time.Duration
		ok      bool
	}{
		{busyMessage(4, 4, 7*time.Second, "--max-concurrent"), 4, 7 * time.Second, true},
		// The answer of a responder from before the hint.
		{"responder busy: 4 tests under way; try again shortly", 4, 0, true},
		{"responder busy: 2 tests under way for longer than 10s; try again shortly", 2, 0, true},
		{"responder busy: 4 tests under way (--max-concurrent 4); retry after 7", 4, 0, true},
		{"responder busy: many tests under way", 0, 0, false},
		{"responder busy: 4", 0, 0, false},
		{"responder refused: the test uses 8 QPs", 0, 0, false},
		{"", 0, 0, false},
	} {
		running, retry, ok := parseBusy(tc.msg)
		if running != tc.running || retry != tc.retry || ok != tc.ok {
			t.Errorf("parseBusy(%q) = %d, %v, %v; want %d, %v, %v", tc.msg, running, retry, ok, tc.running, tc.retry, tc.ok)
		}
	}
}

func FuzzParseBusy(f *testing.F) {
	f.Add(busyMessage(4, 4, 7*time.Second, "--max-concurrent"))
	f.Add("responder busy: 4 tests under way; try again shortly")
	f.Add("responder busy: 99999999999999999999 tests under way; retry after 99999999999999s")
	f.Add("responder busy: ")
	f.Fuzz(func(t *testing.T, msg string) {
		running, retry, ok := parseBusy(msg)
		if !ok && (running != 0 || retry != 0) {
			t.Errorf("%q: not busy, yet %d running, retry after %v", msg, running, retry)
		}
		if running < 0 || retry < 0 {
			t.Errorf("%q: %d running, retry after %v", msg, running, retry)
		}
		if ok {
			// What this build writes, it reads back the same.
			again, r2, ok2 := parseBusy(busyMessage(running, running, retry, "--max-concurrent"))
			if !ok2 || again != running || r2 != retry.Truncate(time.Second) {
				t.Errorf("%q: round trip gave %d, %v, %v", msg, again, r2, ok2)
			}
		}
	})
}

// The spec message of a client from before sessions (no keep_ms, no
// no_counters), as that build (d540329) wrote it for the exporter's
// default probe, still decodes into a one-run
// request; and the spec-ok a current responder sends for one run is
// byte for byte what such a client expects.
func TestOlderSpecMessage(t *testing.T) {
	raw, err := os.ReadFile("testdata/spec-before-sessions.json")
	if err != nil {
		t.Fatal(err)
	}
	var req specMsg
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("the older spec message: %v", err)
	}
	if req.KeepMS != 0 || req.NoCounters {
		t.Errorf("the older spec message reads as keep %d ms, no counters %v", req.KeepMS, req.NoCounters)
	}
	if _, err := req.Spec.Complete(); err != nil {
		t.Errorf("the older spec does not complete: %v", err)
	}
	ok, err := json.Marshal(specOKMsg{Device: "rxe0"})
	if err != nil || string(ok) != `{"device":"rxe0"}` {
		t.Errorf("spec-ok for one run is %s, %v; an older client expects {\"device\":\"rxe0\"}", ok, err)
	}
}

// A client that skips the spec, or sends what this responder does not
// serve, is told so at once; the connection is not left hanging.
func TestResponderWrongFirstRequest(t *testing.T) {
	addr, _ := startServer(t, ServerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := dialServer(t, addr, "")
	if err := c.Send(ctx, ctrl.KindReady, nil); err != nil {
		t.Fatal(err)
	}
	err := c.Recv(ctx, ctrl.KindSpecOK, nil)
	var re *ctrl.RemoteError
	if !errors.As(err, &re) || re.Msg != "got ready as the first request, want spec, relay or doctor" {
		t.Errorf("ready first: %v", err)
	}
}

// A set-up that runs out of the test's bound (here a client that says
// nothing after the handshake) is stopped, and the client is told which
// limit stopped it rather than left with a closed connection.
func TestSetupPastMaxTestNamesTheLimit(t *testing.T) {
	const maxTest = 300 * time.Millisecond
	addr, _ := startServer(t, ServerConfig{MaxTest: maxTest, StepTimeout: 5 * time.Second})
	c := dialServer(t, addr, "")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Recv(ctx, ctrl.KindSpecOK, &specOKMsg{})
	var re *ctrl.RemoteError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "set-up ran past the 300ms this responder allows per test (--max-test)") {
		t.Fatalf("got %v, want the responder's error naming --max-test", err)
	}
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("the refusal came after %v: the step deadline ended the set-up, not --max-test", took)
	}
}
