package prober

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rdmarun/rdmarun/rdma"
)

// recorder is a fake transport that counts probes per target and checks
// that one job's probes never overlap.
type recorder struct {
	mu       sync.Mutex
	starts   map[string][]time.Time
	inFlight atomic.Int32
	maxIn    atomic.Int32
	delay    time.Duration
}

func (r *recorder) run(ctx context.Context, p Peer, spec rdma.Test) (*rdma.Result, error) {
	target := p.Addr
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for {
		m := r.maxIn.Load()
		if n <= m || r.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	r.mu.Lock()
	r.starts[target] = append(r.starts[target], time.Now())
	r.mu.Unlock()
	select {
	case <-time.After(r.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return latencyResult(2000), nil
}

func jobs(targets ...string) []Job {
	var out []Job
	for _, tg := range targets {
		k := key
		k.Target = tg
		out = append(out, Job{Key: k, Peer: Peer{Addr: tg}, Spec: complete(rdma.TestSpec{Op: rdma.OpWrite}), Interval: 20 * time.Millisecond, Timeout: time.Second})
	}
	return out
}

func TestSchedulerRunsEveryJob(t *testing.T) {
	before := runtime.NumGoroutine()
	reg := prometheus.NewRegistry()
	rec := &recorder{starts: map[string][]time.Time{}, delay: time.Millisecond}
	s := NewScheduler(reg, rec.run, NewMetrics(reg), 0.1, 0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s.Run(ctx, jobs("a:1", "b:1", "c:1"))
	for _, tg := range []string{"a:1", "b:1", "c:1"} {
		if n := len(rec.starts[tg]); n < 8 || n > 20 {
			t.Errorf("%s probed %d times in 300 ms at a 20 ms interval", tg, n)
		}
	}
	if testutil.CollectAndCount(reg, "rdmarun_exporter_scheduler_lag_seconds") != 1 {
		t.Error("no lag histogram")
	}
	// Run returned: every probe goroutine is gone.
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
}

// TestSchedulerRateCap: three jobs on one target, each due every 20 ms,
// capped at 20 probes per second for the target.
func TestSchedulerRateCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := &recorder{starts: map[string][]time.Time{}}
	s := NewScheduler(reg, rec.run, NewMetrics(reg), 0, 20, nil)
	js := jobs("t:1", "t:1", "t:1")
	for i := range js {
		js[i].Key.Size = 2 << i // three label sets on one target
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s.Run(ctx, js)
	starts := rec.starts["t:1"]
	if len(starts) > 11 {
		t.Errorf("%d probes in 500 ms under a cap of 20/s", len(starts))
	}
	// Each probe starts no earlier than its booked slot, 50 ms after the
	// last; only the first may start late, so the span bounds the count.
	if n := len(starts); n > 1 {
		if span, least := starts[n-1].Sub(starts[0]), time.Duration(n-1)*50*time.Millisecond-20*time.Millisecond; span < least {
			t.Errorf("%d probes within %v, the cap allows one per 50 ms", n, span)
		}
	}
}

// TestSchedulerSlowTarget: a target slower than its interval is probed
// one at a time, never piling up.
func TestSchedulerSlowTarget(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := &recorder{starts: map[string][]time.Time{}, delay: 50 * time.Millisecond}
	s := NewScheduler(reg, rec.run, NewMetrics(reg), 0, 0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s.Run(ctx, jobs("slow:1"))
	if m := rec.maxIn.Load(); m != 1 {
		t.Errorf("%d probes of one job in flight at once", m)
	}
}

// TestSchedulerForgetsPastTargets: addresses that came and went (DNS
// answers change) do not stay in the rate cap's bookkeeping forever.
func TestSchedulerForgetsPastTargets(t *testing.T) {
	s := NewScheduler(prometheus.NewRegistry(), nil, nil, 0, 1000, nil)
	ctx := context.Background()
	for i := range 1000 {
		if start, _ := s.admit(ctx, "10.0.0."+strconv.Itoa(i)+":18520", time.Second); start.IsZero() {
			t.Fatal("admit gave up with a live context")
		}
		// Each entry holds for 1 ms; let it pass before the next.
		time.Sleep(1100 * time.Microsecond)
	}
	s.mu.Lock()
	n := len(s.next)
	s.mu.Unlock()
	if n > 64 {
		t.Errorf("%d targets remembered after 1000 came and went, want at most 64", n)
	}
}

// TestSchedulerSetLimits: a reload's rate cap applies to probes already
// running.
func TestSchedulerSetLimits(t *testing.T) {
	s := NewScheduler(prometheus.NewRegistry(), nil, nil, 0, 0, nil)
	ctx := context.Background()
	first, _ := s.admit(ctx, "t", time.Second)
	s.SetLimits(0.5, 10, 0) // at most one probe per 100 ms
	a, _ := s.admit(ctx, "t", time.Second)
	b, _ := s.admit(ctx, "t", time.Second)
	if gap := b.Sub(a); gap < 90*time.Millisecond {
		t.Errorf("after SetLimits(_, 10), two probes of one target %v apart, want >= 100 ms", gap)
	}
	if first.IsZero() {
		t.Error("no cap: admit returned zero")
	}
	s.mu.Lock()
	j := s.Jitter
	s.mu.Unlock()
	if j != 0.5 {
		t.Errorf("jitter %v after SetLimits(0.5, _, _)", j)
	}
}

// TestSchedulerNodeBudget: twenty targets, each due every 100 ms (200
// probes/s asked for), under a node budget of 50/s: starts come at most
// one per 20 ms, spread rather than in bursts, and the rounds the budget
// cannot fit within an interval are shed and counted, not queued.
func TestSchedulerNodeBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := &recorder{starts: map[string][]time.Time{}}
	s := NewScheduler(reg, rec.run, NewMetrics(reg), 0, 0, nil)
	s.SetLimits(0, 0, 50)
	var targets []string
	for i := range 20 {
		targets = append(targets, "t"+strconv.Itoa(i)+":1")
	}
	js := jobs(targets...)
	for i := range js {
		js[i].Interval = 100 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { s.Run(ctx, js); close(done) }()
	// The demand is known while the jobs run.
	time.Sleep(200 * time.Millisecond)
	if d := testutil.ToFloat64(s.demand); d < 199 || d > 201 {
		t.Errorf("demand %v probes/s, want 200 (20 jobs every 100 ms)", d)
	}
	<-done
	var all []time.Time
	for _, st := range rec.starts {
		all = append(all, st...)
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	// One second at 50/s: 50 slots, the first at once.
	if n := len(all); n < 40 || n > 51 {
		t.Errorf("%d probes started in 1 s under a budget of 50/s", n)
	}
	// Slots are 20 ms apart, so any six starts span at least 100 ms; a
	// start is recorded when the transport is called, at most a scheduling
	// delay after its slot, hence the 20 ms of slack. Bunched, the 20
	// targets due together would start within a millisecond.
	for i := 5; i < len(all); i++ {
		if span := all[i].Sub(all[i-5]); span < 80*time.Millisecond {
			t.Errorf("probes %d to %d started within %v, want >= 100 ms for six starts at 50/s (spread, not bunched)", i-5, i, span)
			break
		}
	}
	shed := testutil.ToFloat64(s.shed)
	// 200 rounds fell due and 50 ran; most of the rest were shed.
	if shed < 100 {
		t.Errorf("%v rounds shed, want most of the ~150 the budget could not fit", shed)
	}
	if d := testutil.ToFloat64(s.demand); d != 0 {
		t.Errorf("demand %v after every job stopped, want 0", d)
	}
	if b := testutil.ToFloat64(s.budget); b != 50 {
		t.Errorf("budget gauge %v, want 50", b)
	}
}
