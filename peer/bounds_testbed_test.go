//go:build testbed

package peer_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/rdma/rdmatest"
)

// TestServeBounds: the real responder refuses each test past one of its
// limits, before it allocates anything, with the limit's flag and what
// was asked and allowed; rdmarun shows that text and exits non-zero.
// The total memory is shared by kept sessions: past it a session is
// refused, and admitted again once another closes.
func TestServeBounds(t *testing.T) {
	r := startResponder(t, "--max-memory", "80KiB", "--max-qps", "4", "--max-test", "20s")
	for _, tc := range []struct {
		name string
		spec rdma.TestSpec
		want string
	}{
		{"qps", rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10, QPs: 8},
			"responder refused: the test uses 8 QPs; the responder allows 4 per test (--max-qps)"},
		{"memory per test", rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10, Size: 64 << 10},
			"responder refused: the test registers 128KiB; the responder allows 80KiB per test and in total (--max-memory)"},
		{"duration", rdma.TestSpec{Op: rdma.OpWrite, Duration: rdma.Duration(time.Minute)},
			"responder refused: the test runs for 1m0s, plus up to 15s to drain and answer; the responder allows 20s per test (--max-test)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := qpsOn(t, "rxe0")
			_, err := peer.Run(context.Background(), client(r), rdmatest.Complete(t, tc.spec))
			var pe *peer.Error
			var re *ctrl.RemoteError
			if !errors.As(err, &pe) || pe.Stage != peer.StageSetup || !errors.As(err, &re) || !strings.HasSuffix(re.Msg, tc.want) {
				t.Errorf("got %v\nwant the responder's refusal at set-up ending %q", err, tc.want)
			}
			if got := qpsOn(t, "rxe0"); got != base {
				t.Errorf("the refused test left %d QPs on the responder's device, %d before", got, base)
			}
		})
	}

	// A test given by iterations cannot be bounded up front; it is
	// stopped at --max-test, and the client is told so. The set-up
	// counts against the bound too, and took 2.5 s in a busy VM: 6 s.
	short := startResponder(t, "--max-test", "6s")
	start := time.Now()
	_, err := peer.Run(context.Background(), client(short), rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, Iterations: 1 << 30}))
	if err == nil || !strings.Contains(err.Error(), "the test ran for the 6s this responder allows per test (--max-test) and was stopped") {
		t.Errorf("a test past --max-test: %v\n%s", err, short.output())
	}
	t.Logf("a test past --max-test 6s ended after %v", time.Since(start).Round(time.Millisecond))

	t0 := time.Now()
	// rdmarun shows the refusal and exits non-zero.
	out, err := exec.Command(rdmarunBin(t), "bench", "--peer", r.addr, "--device", "rxe1", "--qps", "8", "--iters", "10").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(string(out), "the test uses 8 QPs; the responder allows 4 per test (--max-qps)") {
		t.Errorf("rdmarun bench --qps 8: %v, want a non-zero exit naming --max-qps\n%s", err, out)
	}

	t.Logf("rdmarun bench refused in %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	// 16 KiB messages, one QP: two 16 KiB areas, 32 KiB registered
	// each; the total (80 KiB) holds two such sessions, not three.
	// Small, because large messages are slow under soft-RoCE in the VM
	// (11 round trips of 256 KiB took 6 s).
	spec := rdmatest.Complete(t, rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10, Size: 16 << 10})
	if got := rdma.SpecConfig(spec, rdma.EndpointConfig{}).RegisteredBytes(); got != 32<<10 {
		t.Fatalf("the session's test registers %d bytes, this test assumes 32KiB", got)
	}
	keep := func() (*peer.Session, error) {
		return peer.Dial(context.Background(), client(r), spec, time.Minute)
	}
	var kept []*peer.Session
	for i := range 2 {
		s, err := keep()
		if err != nil {
			t.Fatalf("session %d: %v\n%s", i+1, err, r.output())
		}
		defer s.Close()
		if s.Idle() == 0 {
			t.Fatalf("session %d was not kept", i+1)
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatalf("run on kept session %d: %v\n%s", i+1, err, r.output())
		}
		rdmatest.CheckResult(t, res)
		kept = append(kept, s)
	}
	first := kept[0]
	t.Logf("two sessions kept in %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	_, err = keep()
	want := "responder refused: the test registers 32KiB and 2 tests and kept sessions hold 64KiB; the responder allows 80KiB in total (--max-memory); retry when they end"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a third session past the total: %v\nwant %q", err, want)
	}
	t.Logf("third refused in %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	first.Close()
	// Close says bye; the responder frees the session's memory when it
	// has closed its endpoint, a moment later.
	var third *peer.Session
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if third, err = keep(); err == nil {
			break
		}
		if !strings.Contains(err.Error(), "(--max-memory)") || time.Now().After(deadline) {
			t.Fatalf("a third session after the first closed: %v\n%s", err, r.output())
		}
	}
	defer third.Close()
	t.Logf("third admitted %v after the first closed", time.Since(t0).Round(time.Millisecond))
	res, err := third.Run(context.Background())
	if err != nil {
		t.Fatalf("run on the third session: %v", err)
	}
	rdmatest.CheckResult(t, res)
}

func rdmarunBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("RDMARUN_BIN")
	if bin == "" {
		t.Fatal("RDMARUN_BIN is not set (make testbed-test sets it)")
	}
	return bin
}
