package perftest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunClient: a client that cannot connect yet is tried again until it
// does; any other failure, or the end of ctx, ends the tries.
func TestRunClient(t *testing.T) {
	// Each try appends a line to tries; the first two find no server.
	tries := filepath.Join(t.TempDir(), "tries")
	script := `echo x >> ` + tries + `; n=$(wc -l < ` + tries + `); if [ "$n" -le 2 ]; then echo " Couldn't connect to 10.0.0.1:18515"; exit 1; fi; echo connected`
	out, err := RunClient(context.Background(), func() *exec.Cmd { return exec.Command("sh", "-c", script) })
	if err != nil || strings.TrimSpace(string(out)) != "connected" {
		t.Errorf("got %q, %v; want the third try's output", out, err)
	}
	if b, _ := exec.Command("wc", "-l", tries).Output(); !strings.HasPrefix(strings.TrimSpace(string(b)), "3") {
		t.Errorf("tries: %s, want 3", b)
	}

	calls := 0
	out, err = RunClient(context.Background(), func() *exec.Cmd {
		calls++
		return exec.Command("sh", "-c", "echo 'Unable to find the Infiniband/RoCE device'; exit 1")
	})
	if err == nil || calls != 1 || !strings.Contains(string(out), "Unable to find") {
		t.Errorf("another failure: %q, %v after %d tries; want it returned after 1", out, err, calls)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = RunClient(ctx, func() *exec.Cmd { return exec.Command("sh", "-c", "echo \"Couldn't connect\"; exit 1") })
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("a server that never listens: %v after %v; want the failure once ctx ends", err, time.Since(start))
	}
}

// TestNotListening: the CM client's failures while its server starts are
// tried again within the grace only; other failures never.
func TestNotListening(t *testing.T) {
	rejected := "Unexpected CM event bl blka 8\n Unable to perform rdma_client function\n Unable to init the socket connection\n"
	refused := "Function rdma_connect failed\n Unable to perform rdma_client function\n"
	cases := []struct {
		name  string
		out   string
		tried time.Duration
		want  bool
	}{
		{"tcp refused", " Couldn't connect to 10.0.0.1:18515\n", time.Minute, true},
		{"cm rejected, starting", rejected, time.Second, true},
		{"cm refused, starting", refused, time.Second, true},
		{"cm rejected, after the grace", rejected, cmListenGrace, false},
		{"cm refused, after the grace", refused, cmListenGrace + time.Second, false},
		{"rdma_connect failed alone", "Function rdma_connect failed\n", time.Second, false},
		{"no device", "Unable to find the Infiniband/RoCE device\n", time.Second, false},
	}
	for _, c := range cases {
		if got := notListening([]byte(c.out), c.tried); got != c.want {
			t.Errorf("%s: notListening after %v = %v, want %v", c.name, c.tried, got, c.want)
		}
	}
}
