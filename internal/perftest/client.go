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
//
// Through rdma_cm (-R) a server not listening yet looks like a failure
// of the CM connect: over RoCE the responder's CM rejects the request
// ("Unexpected CM event ... 8", REJECTED), over iWARP the TCP connect is
// refused ("Function rdma_connect failed"); both measured in the testbed,
// a run in ten or so, with the server started just before. Those are
// tried again only for cmListenGrace from the first try, since later
// they are real failures.
func RunClient(ctx context.Context, newClient func() *exec.Cmd) ([]byte, error) {
	start := time.Now()
	for {
		out, err := newClient().CombinedOutput()
		if err == nil || !notListening(out, time.Since(start)) || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// cmListenGrace is how long a CM client's connect failure may mean its
// server is still starting: perftest's server takes well under a second
// to listen here, so ten is a bound no live server misses.
const cmListenGrace = 10 * time.Second

// notListening reports whether a failed client's output says its server
// was not listening yet, after tried for so long.
func notListening(out []byte, tried time.Duration) bool {
	if bytes.Contains(out, []byte("Couldn't connect")) {
		return true
	}
	cm := bytes.Contains(out, []byte("Unable to perform rdma_client function")) &&
		(bytes.Contains(out, []byte("Function rdma_connect failed")) || bytes.Contains(out, []byte("Unexpected CM event")))
	return cm && tried < cmListenGrace
}
