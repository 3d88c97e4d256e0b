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
	s := NewScheduler(reg, RunFunc(rec.run), NewMetrics(reg), 0.1, 0, nil)
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
	s := NewScheduler(reg, RunFunc(rec.run), NewMetrics(reg), 0, 20, nil)
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
	s := NewScheduler(reg, RunFunc(rec.run), NewMetrics(reg), 0, 0, nil)
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
// probes/s asked for), under a node budget of 50/s: no more than the
// budget start, the demand is exported while the jobs run, and the rounds
// the budget cannot fit are shed and counted, not queued.
func TestSchedulerNodeBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := &recorder{starts: map[string][]time.Time{}}
	s := NewScheduler(reg, RunFunc(rec.run), NewMetrics(reg), 0, 0, nil)
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
	time.Sleep(200 * time.Millisecond)
	if d := testutil.ToFloat64(s.demand); d < 199 || d > 201 {
		t.Errorf("demand %v probes/s, want 200 (20 jobs every 100 ms)", d)
	}
	<-done
	n := 0
	for _, st := range rec.starts {
		n += len(st)
	}
	// One second at 50/s: 50 slots, the first at once. Without the budget
	// the jobs would start about 200.
	if n > 51 {
		t.Errorf("%d probes started in 1 s under a budget of 50/s", n)
	}
	if shed := testutil.ToFloat64(s.shed); shed < 50 {
		t.Errorf("%v rounds shed, want most of the ~150 the budget could not fit", shed)
	}
	if d := testutil.ToFloat64(s.demand); d != 0 {
		t.Errorf("demand %v after every job stopped, want 0", d)
	}
	if b := testutil.ToFloat64(s.budget); b != 50 {
		t.Errorf("budget gauge %v, want 50", b)
	}
}

// TestSchedulerNodeBudgetSlots: probes that fall due together get start
// slots 1/budget apart, spread rather than in one burst, and a round
// whose slot would come later than its interval is shed at once. The
// slots are what admit books, so the check does not depend on how
// promptly goroutines wake.
func TestSchedulerNodeBudgetSlots(t *testing.T) {
	s := NewScheduler(prometheus.NewRegistry(), nil, nil, 0, 0, nil)
	s.SetLimits(0, 0, 50) // a slot every 20 ms
	ctx := context.Background()
	type booking struct {
		start    time.Time
		admitted bool
	}
	book := func(interval time.Duration) []booking {
		out := make([]booking, 20)
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() {
				start, ok := s.admit(ctx, "t"+strconv.Itoa(i)+":1", interval)
				out[i] = booking{start, ok}
			})
		}
		wg.Wait()
		return out
	}
	// Twenty due at once, each with a second to spare: all run, 20 ms
	// apart at least.
	var starts []time.Time
	for _, b := range book(time.Second) {
		if !b.admitted {
			t.Fatal("a round was shed with 1 s to spare for 20 slots of 20 ms")
		}
		starts = append(starts, b.start)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 20*time.Millisecond {
			t.Fatalf("slots %d and %d are %v apart, want >= 20 ms", i-1, i, gap)
		}
	}
	// Twenty more at once, with 100 ms each: about six slots fit in
	// 100 ms; the others are shed at once instead of queued.
	admitted := 0
	for _, b := range book(100 * time.Millisecond) {
		if b.admitted {
			admitted++
		}
	}
	if admitted < 1 || admitted > 10 {
		t.Errorf("%d of 20 rounds with a 100 ms interval booked under 50/s, want about 6 (1..10)", admitted)
	}
}

// linkCounter is a fake transport whose links count what happens to
// them: opened once per job, a connection set up on the first probe and
// after every failure, closed when the job ends.
type linkCounter struct {
	mu            sync.Mutex
	opened        map[string]int
	closed        map[string]int
	keep          map[string]time.Duration
	probes, dials atomic.Int32
	failEvery     int32 // every failEvery-th probe fails; 0: none
}

func (c *linkCounter) Open(p Peer, _ rdma.Test, keep time.Duration) Link {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opened[p.Addr]++
	c.keep[p.Addr] = keep
	return &countedLink{c: c, addr: p.Addr}
}

type countedLink struct {
	c         *linkCounter
	addr      string
	connected bool
}

func (l *countedLink) Probe(context.Context) (*rdma.Result, time.Duration, error) {
	var setup time.Duration
	if !l.connected {
		l.connected = true
		l.c.dials.Add(1)
		setup = 3 * time.Millisecond
	}
	if n := l.c.probes.Add(1); l.c.failEvery > 0 && n%l.c.failEvery == 0 {
		l.connected = false
		return nil, setup, errTimeout
	}
	return latencyResult(2000), setup, nil
}

func (l *countedLink) Settle() {}

func (l *countedLink) Close() {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.c.closed[l.addr]++
}

// TestSchedulerKeepsALinkPerJob: each job probes over one link for its
// whole life, asked to keep its connection past a round's jitter, and
// closes it when the job ends; connections are counted apart from probes.
func TestSchedulerKeepsALinkPerJob(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := &linkCounter{opened: map[string]int{}, closed: map[string]int{}, keep: map[string]time.Duration{}, failEvery: 5}
	m := NewMetrics(reg)
	s := NewScheduler(reg, c, m, 0.1, 0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	js := jobs("a:1", "b:1")
	s.Run(ctx, js)
	for _, j := range js {
		if c.opened[j.Peer.Addr] != 1 || c.closed[j.Peer.Addr] != 1 {
			t.Errorf("%s: link opened %d and closed %d times, want once each", j.Peer.Addr, c.opened[j.Peer.Addr], c.closed[j.Peer.Addr])
		}
		if want := 2*j.Interval + j.Timeout; c.keep[j.Peer.Addr] != want {
			t.Errorf("%s: link asked to keep its connection %v, want %v", j.Peer.Addr, c.keep[j.Peer.Addr], want)
		}
	}
	probes, dials := c.probes.Load(), c.dials.Load()
	if probes < 16 {
		t.Fatalf("%d probes in 300 ms at a 20 ms interval over two jobs", probes)
	}
	// One connection per job, and one more after every failed probe.
	if want := 2 + (probes-1)/5; dials < want-2 || dials > want+2 {
		t.Errorf("%d connections for %d probes failing every 5th, want about %d", dials, probes, want)
	}
	conns := 0.0
	for _, j := range js {
		conns += testutil.ToFloat64(read(m, famConnections, j.Key.values()...))
	}
	if conns != float64(dials) {
		t.Errorf("rdma_probe_connections_total sums to %v, want the %d connections set up", conns, dials)
	}
	if n := testutil.CollectAndCount(m.set, "rdma_probe_connection_setup_seconds"); n != 2 {
		t.Errorf("%d rdma_probe_connection_setup_seconds series, want one per job", n)
	}
}
