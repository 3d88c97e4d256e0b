package prober

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmarun/rdmarun/rdma"
)

// Job is one probe repeated forever: a target, one spec, how often.
type Job struct {
	Key      Key
	Peer     Peer // the target's responder
	Spec     rdma.Test
	Interval time.Duration
	Timeout  time.Duration
}

// Scheduler runs jobs on their own schedules, as smokeping_prober does,
// independent of scrapes: a slow or dead target costs its own timeout and
// never delays a scrape or another target.
type Scheduler struct {
	Transport Transport
	Metrics   *Metrics
	// Jitter spreads each interval by up to this fraction either way, and
	// the first probe waits a random part of an interval, so that a
	// fleet of exporters started together does not probe in step.
	Jitter float64
	// MaxPerSecond caps the probes sent to one target, over all its
	// jobs; 0 means no cap.
	MaxPerSecond float64
	// NodeMaxPerSecond caps the probes this node starts, over every
	// target and module together (mesh.max_probes_per_second); 0 means
	// no cap. The three above are read under mu once probing runs;
	// change them with SetLimits.
	NodeMaxPerSecond float64
	Logger           *slog.Logger

	lag    prometheus.Histogram
	shed   prometheus.Counter
	budget prometheus.Gauge
	demand prometheus.Gauge
	mu     sync.Mutex
	next   map[string]time.Time // per target: the earliest a probe may start
	// nextNode is the node's next free start slot under NodeMaxPerSecond.
	// Slots are 1/NodeMaxPerSecond apart, so probes that fall due together
	// start spread over time instead of in one burst.
	nextNode time.Time
	// swept is len(next) after the last sweep of past entries; targets
	// come and go with DNS answers, so the map is swept when it doubles.
	swept int
	rand  *rand.Rand
	randM sync.Mutex
}

// NewScheduler registers the scheduler's own metrics (how late probes
// start, the node's budget, the demand on it and the rounds shed) on reg.
func NewScheduler(reg prometheus.Registerer, tr Transport, m *Metrics, jitter, maxPerSecond float64, logger *slog.Logger) *Scheduler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{
		Transport: tr, Metrics: m, Jitter: jitter, MaxPerSecond: maxPerSecond, Logger: logger,
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rdmarun_exporter_scheduler_lag_seconds",
			Help:    "How much later than scheduled a probe started, in seconds: rate caps and an overloaded host show here.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}),
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rdmarun_exporter_probes_shed_total",
			Help: "Probe rounds skipped because the node's probe budget (mesh.max_probes_per_second) had no start slot within the probe's interval.",
		}),
		budget: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_probe_budget_per_second",
			Help: "The node's probe budget, probes started per second over all targets and modules (mesh.max_probes_per_second); 0 means no cap.",
		}),
		demand: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_probe_demand_per_second",
			Help: "Probes per second the schedule asks for: the sum over the running probe jobs of one over their interval.",
		}),
		next: map[string]time.Time{},
		rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed)),
	}
	reg.MustRegister(s.lag, s.shed, s.budget, s.demand)
	return s
}

// Run probes every job until ctx ends, then returns once every probe in
// flight has finished (each is bounded by its job's timeout).
func (s *Scheduler) Run(ctx context.Context, jobs []Job) {
	var wg sync.WaitGroup
	for _, j := range jobs {
		s.Metrics.Init(j.Key, j.Spec.Measure == rdma.MeasureBandwidth)
		rate := 1 / j.Interval.Seconds()
		s.demand.Add(rate)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.demand.Sub(rate)
			s.loop(ctx, j)
		}()
	}
	wg.Wait()
}

func (s *Scheduler) loop(ctx context.Context, j Job) {
	// The job's link keeps its connection between rounds: asked to last
	// two intervals and a timeout, it outlives a round's jitter and one
	// round shed.
	link := s.Transport.Open(j.Peer, j.Spec, 2*j.Interval+j.Timeout)
	defer link.Close()
	due := time.Now().Add(time.Duration(s.uniform() * float64(j.Interval)))
	for {
		if !sleepUntil(ctx, due) {
			return
		}
		switch start, admitted := s.admit(ctx, j.Peer.Addr, j.Interval); {
		case ctx.Err() != nil:
			return
		case !admitted:
			s.shed.Inc()
		default:
			s.lag.Observe(start.Sub(due).Seconds())
			if took, err := ProbeLink(ctx, link, s.Metrics, j.Key, j.Timeout); err != nil && ctx.Err() == nil {
				s.Logger.Debug("probe failed", "target", j.Peer.Addr, "op", j.Key.Op, "size", j.Key.Size, "took", took, "err", err)
			}
		}
		// The next probe is due an interval after this one was, not
		// after it ended, so a slow target does not drift its schedule.
		s.mu.Lock()
		jitter := s.Jitter
		s.mu.Unlock()
		spread := 1 + jitter*(2*s.uniform()-1)
		due = due.Add(time.Duration(spread * float64(j.Interval)))
		if now := time.Now(); due.Before(now) {
			due = now
		}
	}
}

// admit books a start for one probe of a job due every interval, under
// the target's rate cap and the node's budget, and waits for it. It
// returns the start and true; false when the node's budget has no slot
// within interval (the round is shed rather than run late: a probe later
// than its interval would only push the next one back, and the schedule
// would fall further behind for good); a zero time when ctx ended first.
func (s *Scheduler) admit(ctx context.Context, target string, interval time.Duration) (time.Time, bool) {
	s.mu.Lock()
	now := time.Now()
	start := now
	if s.NodeMaxPerSecond > 0 {
		slot := now
		if s.nextNode.After(now) {
			slot = s.nextNode
		}
		if slot.Sub(now) > interval {
			s.mu.Unlock()
			return now, false
		}
		s.nextNode = slot.Add(time.Duration(float64(time.Second) / s.NodeMaxPerSecond))
		start = slot
	}
	if s.MaxPerSecond > 0 {
		if n := s.next[target]; n.After(start) {
			start = n
		}
		s.next[target] = start.Add(time.Duration(float64(time.Second) / s.MaxPerSecond))
		if len(s.next) > 2*max(s.swept, 32) {
			// An entry in the past no longer holds anything back.
			for t, n := range s.next {
				if n.Before(now) {
					delete(s.next, t)
				}
			}
			s.swept = len(s.next)
		}
	}
	s.mu.Unlock()
	if !sleepUntil(ctx, start) {
		return time.Time{}, true
	}
	return start, true
}

// SetLimits changes the jitter, the per-target rate cap and the node's
// budget, for a reloaded configuration; probes under way take them from
// their next round.
func (s *Scheduler) SetLimits(jitter, maxPerSecond, nodeMaxPerSecond float64) {
	s.mu.Lock()
	s.Jitter, s.MaxPerSecond, s.NodeMaxPerSecond = jitter, maxPerSecond, nodeMaxPerSecond
	s.mu.Unlock()
	s.budget.Set(nodeMaxPerSecond)
}

func (s *Scheduler) uniform() float64 {
	s.randM.Lock()
	defer s.randM.Unlock()
	return s.rand.Float64()
}

// sleepUntil waits for t or ctx; it reports whether t came first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
