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
	// Both above are read under mu once probing runs; change them with
	// SetLimits.
	Logger *slog.Logger

	lag  prometheus.Histogram
	mu   sync.Mutex
	next map[string]time.Time // per target: the earliest a probe may start
	// swept is len(next) after the last sweep of past entries; targets
	// come and go with DNS answers, so the map is swept when it doubles.
	swept int
	rand  *rand.Rand
	randM sync.Mutex
}

// NewScheduler registers the scheduler's own metric (how late probes
// start) on reg.
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
		next: map[string]time.Time{},
		rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed)),
	}
	reg.MustRegister(s.lag)
	return s
}

// Run probes every job until ctx ends, then returns once every probe in
// flight has finished (each is bounded by its job's timeout).
func (s *Scheduler) Run(ctx context.Context, jobs []Job) {
	var wg sync.WaitGroup
	for _, j := range jobs {
		s.Metrics.Init(j.Key, j.Spec.Measure == rdma.MeasureBandwidth)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, j)
		}()
	}
	wg.Wait()
}

func (s *Scheduler) loop(ctx context.Context, j Job) {
	due := time.Now().Add(time.Duration(s.uniform() * float64(j.Interval)))
	for {
		if !sleepUntil(ctx, due) {
			return
		}
		start := s.admit(ctx, j.Peer.Addr)
		if start.IsZero() {
			return
		}
		s.lag.Observe(start.Sub(due).Seconds())
		if err := ProbeRDMA(ctx, s.Transport, s.Metrics, j.Key, j.Peer, j.Spec, j.Timeout); err != nil && ctx.Err() == nil {
			s.Logger.Debug("probe failed", "target", j.Peer.Addr, "op", j.Key.Op, "size", j.Key.Size, "err", err)
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

// admit waits until the target's rate cap allows a probe and books it;
// it returns the start time, or zero when ctx ended first.
func (s *Scheduler) admit(ctx context.Context, target string) time.Time {
	s.mu.Lock()
	if s.MaxPerSecond <= 0 {
		s.mu.Unlock()
		return time.Now()
	}
	gap := time.Duration(float64(time.Second) / s.MaxPerSecond)
	start := time.Now()
	if n := s.next[target]; n.After(start) {
		start = n
	}
	s.next[target] = start.Add(gap)
	if len(s.next) > 2*max(s.swept, 32) {
		// An entry in the past no longer holds anything back.
		for t, n := range s.next {
			if n.Before(start) {
				delete(s.next, t)
			}
		}
		s.swept = len(s.next)
	}
	s.mu.Unlock()
	if !sleepUntil(ctx, start) {
		return time.Time{}
	}
	return start
}

// SetLimits changes the jitter and the per-target rate cap, for a
// reloaded configuration; probes under way take them from their next
// round.
func (s *Scheduler) SetLimits(jitter, maxPerSecond float64) {
	s.mu.Lock()
	s.Jitter, s.MaxPerSecond = jitter, maxPerSecond
	s.mu.Unlock()
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
