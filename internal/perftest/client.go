package perftest

import (
	"bytes"
	"context"
	"os/exec"
	"time"
)

// RunClient runs a perftest client, made anew by newClient for each try,
// until it connects or ctx ends, and returns its combined output. A client
// fails at once while its server is not listening yet, and a server
// started just before has no way to say when it is.
func RunClient(ctx context.Context, newClient func() *exec.Cmd) ([]byte, error) {
	for {
		out, err := newClient().CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("Couldn't connect")) || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
