package doctorcollector

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/exporter/config"
)

// Runner runs the doctor on an interval and keeps its last report.
type Runner struct {
	env    func() doctor.Env
	logger *slog.Logger
	// wake tells the loop that the settings changed; buffered by one, so
	// Apply never blocks and a burst of changes is one wake-up.
	wake chan struct{}
	// now is time.Now, or a test's fixed clock for a golden exposition.
	now func() time.Time

	mu       sync.Mutex
	settings config.Doctor
	last     *result // nil: no run since start or since disabled
}

// result is one run of the doctor.
type result struct {
	report doctor.Report
	at     time.Time
	took   time.Duration
}

// NewRunner returns a runner that checks the host env returns, called
// afresh for every run (so that what it learns from the verbs interface,
// a port's MTU, is current). It does nothing until Apply enables it and
// Start runs its loop. A nil logger discards.
func NewRunner(env func() doctor.Env, logger *slog.Logger) *Runner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{env: env, logger: logger, wake: make(chan struct{}, 1), now: time.Now}
}

// Apply takes new settings, from the config at start and at every
// reload. Disabling drops the last report, so that its series vanish
// rather than go on claiming a state nobody checks any more; a changed
// interval counts from the last run.
func (r *Runner) Apply(s config.Doctor) {
	r.mu.Lock()
	r.settings = s
	if !s.Enabled {
		r.last = nil
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// RunOnce runs the doctor now and keeps its report.
func (r *Runner) RunOnce() {
	start := r.now()
	var rep doctor.Report
	runIdle(func() { rep = doctor.Run(r.env()) })
	res := &result{report: rep, at: start, took: r.now().Sub(start)}
	r.mu.Lock()
	if r.settings.Enabled {
		r.last = res
	}
	r.mu.Unlock()
	r.logger.Debug("doctor ran", "checks", len(rep.Checks), "worst", rep.Worst(), "took", res.took)
}

// Last is the last report, when the doctor is enabled and has run.
func (r *Runner) Last() (rep doctor.Report, at time.Time, took time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return doctor.Report{}, time.Time{}, 0, false
	}
	return r.last.report, r.last.at, r.last.took, true
}

// due reports whether a run is due and, if not, how long until one is
// (0: none is, the doctor is off).
func (r *Runner) due(now time.Time) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.settings.Enabled {
		return false, 0
	}
	if r.last == nil {
		return true, 0
	}
	next := r.last.at.Add(r.settings.Interval)
	if !now.Before(next) {
		return true, 0
	}
	return false, next.Sub(now)
}

// Start runs the doctor at once, if enabled, then every interval until
// ctx ends. It blocks; run it in a goroutine of its own. A run cannot be
// interrupted (it reads files), but it never holds up a scrape: a run
// stuck in a driver shows as rdmarun_doctor_last_run_timestamp_seconds
// standing still.
func (r *Runner) Start(ctx context.Context) {
	for ctx.Err() == nil {
		run, wait := r.due(r.now())
		if run {
			r.RunOnce()
			continue
		}
		// Off, the loop waits for Apply only.
		var tick <-chan time.Time
		var timer *time.Timer
		if wait > 0 {
			timer = time.NewTimer(wait)
			tick = timer.C
		}
		select {
		case <-ctx.Done():
		case <-tick:
		case <-r.wake:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
