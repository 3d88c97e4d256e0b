package runner

import (
	"context"
	"fmt"
	"github.com/rdmarun/rdmarun/ctrl"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// gatedRelay holds every test until want are running at once, so that
// the most at once is reached for certain rather than by timing, and
// counts the tests and goroutines at their peak.
type gatedRelay struct {
	want int
	full chan struct{}
	once sync.Once

	mu            sync.Mutex
	running, most int
	calls         int
	goroutines    int // the most runtime.NumGoroutine seen by a test starting
}

func (g *gatedRelay) RunVia(ctx context.Context, _ peer.ClientConfig, _ peer.Remote, spec rdma.Test) (*peer.Relayed, error) {
	n := runtime.NumGoroutine()
	g.mu.Lock()
	g.running++
	g.calls++
	g.most = max(g.most, g.running)
	g.goroutines = max(g.goroutines, n)
	if g.running == g.want {
		g.once.Do(func() { close(g.full) })
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running--
		g.mu.Unlock()
	}()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-g.full:
		// Held a little longer, so that a coordinator starting more than
		// want is caught at it; one that keeps the bound never exceeds it,
		// however slow the machine.
		time.Sleep(5 * time.Millisecond)
	case <-t.C:
		// want was never running at once: the test reports it.
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &peer.Relayed{Result: measuredAs(spec, 10, 8)}, nil
}

// TestRunRoundsBounded: however many pairs a round holds, the coordinator
// runs at most parallel (DefaultParallel when 0) at once, and holds a
// goroutine only for each running one, not for those waiting: a round of
// 1,000 pairs (2,000 hosts) under the default runs 512 at a time. A
// round within the cap, and an incast round whatever its size, run
// whole.
func TestRunRoundsBounded(t *testing.T) {
	// disjoint is one round of n pairs 2i -> 2i+1, as the schedule never
	// makes it: a Fleet built by hand, or a round above parallel.
	disjoint := func(n int) (int, fleet.Pattern, []fleet.Round) {
		r := fleet.Round{Kind: fleet.Disjoint}
		for i := range n {
			r.Pairs = append(r.Pairs, fleet.Pair{A: fleet.NIC{Host: 2 * i}, B: fleet.NIC{Host: 2*i + 1}})
		}
		return 2 * n, fleet.ExplicitPairs, []fleet.Round{r}
	}
	incast := func(senders int) (int, fleet.Pattern, []fleet.Round) {
		r := fleet.Round{Kind: fleet.IncastRound}
		for i := 1; i <= senders; i++ {
			r.Pairs = append(r.Pairs, fleet.Pair{A: fleet.NIC{Host: i}, B: fleet.NIC{Host: 0}})
		}
		return senders + 1, fleet.Incast, []fleet.Round{r}
	}
	for _, tc := range []struct {
		name     string
		parallel int
		plan     func() (int, fleet.Pattern, []fleet.Round)
		want     int
	}{
		{name: "1000 pairs, the default", plan: func() (int, fleet.Pattern, []fleet.Round) { return disjoint(1000) }, want: DefaultParallel},
		{name: "1000 pairs, parallel 100", parallel: 100, plan: func() (int, fleet.Pattern, []fleet.Round) { return disjoint(1000) }, want: 100},
		{name: "100 pairs, within the default", plan: func() (int, fleet.Pattern, []fleet.Round) { return disjoint(100) }, want: 100},
		{name: "incast of 600 senders, the default", plan: func() (int, fleet.Pattern, []fleet.Round) { return incast(600) }, want: 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Load("testdata/coordinator/cases.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			hosts, pattern, rounds := tc.plan()
			fl := &Fleet{Source: HostSource{Kind: HostsList}, Pattern: pattern, Parallel: tc.parallel, Rounds: rounds}
			for i := range hosts {
				fl.Hosts = append(fl.Hosts, fleet.Host{Name: fmt.Sprintf("h%d", i), Addr: fmt.Sprintf("10.%d.%d.%d:18520", i>>16, i>>8&255, i&255)})
			}
			for _, r := range rounds {
				fl.Pairs = append(fl.Pairs, r.Pairs...)
			}
			sc.Fleet = fl
			g := &gatedRelay{want: tc.want, full: make(chan struct{})}
			base := runtime.NumGoroutine()
			rep, err := ExecuteFleet(context.Background(), sc, Relay{Via: g}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			pairs := len(fl.Pairs)
			if g.most != tc.want {
				t.Errorf("%d tests ran at once at most, want %d", g.most, tc.want)
			}
			if g.calls != 2*pairs || rep.Summary.Passed != 2*pairs {
				t.Errorf("%d tests asked, %d passed; want %d each", g.calls, rep.Summary.Passed, 2*pairs)
			}
			// One goroutine per running pair, and a few of the
			// runtime's and the test's that come and go.
			if extra := g.goroutines - base; extra > tc.want+8 {
				t.Errorf("%d goroutines beside the %d before the run, with %d tests at once: the waiting pairs hold goroutines", extra, base, tc.want)
			}
			t.Logf("%d pairs: at most %d tests at once, %d goroutines beside %d", pairs, g.most, g.goroutines-base, base)
		})
	}
}

// TestRelayCost measures what one real peer.RunVia holds on the
// coordinator while it waits for A's answer, the state a relay spends
// its test in: k relays to a fake A over loopback TCP that accepts each
// and answers only when all k wait. In this process the fake A's side
// is one goroutine and one socket per relay, taken off. What is left is
// DefaultParallel's premise: a goroutine (the caller's) and a socket.
func TestRelayCost(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count open files in:", err)
	}
	const k = 64
	ln, err := ctrl.Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	waiting := make(chan struct{}, k)
	answer := make(chan struct{})
	var serving sync.WaitGroup
	serving.Go(func() {
		for range k {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			serving.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c, err := ctrl.Server(ctx, nc, "tok")
				if err != nil {
					nc.Close()
					return
				}
				defer c.Close()
				var req map[string]any
				if c.Recv(ctx, ctrl.KindRelay, &req) != nil || c.Send(ctx, ctrl.KindRelayOK, map[string]any{"version": peer.RelayVersion, "within": "30s"}) != nil {
					return
				}
				waiting <- struct{}{}
				select {
				case <-answer:
				case <-ctx.Done():
					return
				}
				_ = c.Send(ctx, ctrl.KindRelayResult, map[string]any{"error": map[string]any{"message": "the fake A runs no test"}})
			})
		}
	})
	fds := func() int {
		e, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(e)
	}
	// The accept loop is the fake A's standing goroutine.
	baseG, baseFD := runtime.NumGoroutine(), fds()
	spec, err := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureLatency, Size: 64, Iterations: 100}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	cfg := peer.ClientConfig{Addr: ln.Addr().String(), Token: "tok", StepTimeout: 5 * time.Second}
	errs := make(chan error, k)
	for range k {
		go func() {
			_, err := peer.RunVia(context.Background(), cfg, peer.Remote{Addr: "10.255.0.1:18520"}, spec)
			errs <- err
		}()
	}
	deadline := time.After(10 * time.Second)
	for range k {
		select {
		case <-waiting:
		case err := <-errs:
			t.Fatalf("a relay ended before A answered: %v", err)
		case <-deadline:
			t.Fatal("the relays did not all reach the wait for A's answer within 10 s")
		}
	}
	// Every A-side handler has sent relay-ok; give the clients a moment
	// to be parked in their Recv of the result.
	time.Sleep(50 * time.Millisecond)
	// The accept loop, counted in base, has ended after k accepts.
	g, fd := runtime.NumGoroutine()-(baseG-1)-k, fds()-baseFD-k
	close(answer)
	for range k {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "the fake A runs no test") {
			t.Errorf("relay ended with %v, want the fake A's answer", err)
		}
	}
	serving.Wait()
	t.Logf("%d relays waiting on A: %d goroutines and %d open files on the coordinator's side (%.2f and %.2f a relay)", k, g, fd, float64(g)/k, float64(fd)/k)
	if g > k {
		t.Errorf("%d goroutines for %d relays: more than the caller's own each", g, k)
	}
	if fd > k {
		t.Errorf("%d open files for %d relays: more than a socket each", fd, k)
	}
}
