package doctorcollector

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/exporter/config"
)

// countingRunner is a runner over an empty host that counts its runs.
func countingRunner(runs *atomic.Int64) *Runner {
	return NewRunner(func() doctor.Env {
		runs.Add(1)
		return doctor.Env{}
	}, nil)
}

// waitFor polls cond for up to 10 s: what the runner promises is that a
// run happens, not how fast this machine makes it happen.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStartRunsEveryIntervalAndStops(t *testing.T) {
	var runs atomic.Int64
	r := countingRunner(&runs)
	r.Apply(config.Doctor{Enabled: true, Interval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Start(ctx); close(done) }()
	waitFor(t, "fewer than 3 runs at a 20ms interval", func() bool { return runs.Load() >= 3 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return 10s after its context ended")
	}
}

// TestApplyWakesTheLoop: a runner started disabled sleeps on no timer;
// enabling it must run the doctor without waiting for anything else.
func TestApplyWakesTheLoop(t *testing.T) {
	var runs atomic.Int64
	r := countingRunner(&runs)
	r.Apply(config.Doctor{Enabled: false, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Start(ctx)
	r.Apply(config.Doctor{Enabled: true, Interval: time.Hour})
	waitFor(t, "no run after the doctor was enabled", func() bool {
		_, _, _, ok := r.Last()
		return ok
	})
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1 within the hour's interval", n)
	}
}

func TestDue(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := NewRunner(func() doctor.Env { return doctor.Env{} }, nil)
	r.now = func() time.Time { return t0 }
	if run, wait := r.due(t0); run || wait != 0 {
		t.Errorf("disabled: due = %v, %v; want no run and no timer", run, wait)
	}
	r.Apply(config.Doctor{Enabled: true, Interval: 5 * time.Minute})
	if run, _ := r.due(t0); !run {
		t.Error("enabled, never run: not due")
	}
	r.RunOnce()
	for _, tc := range []struct {
		at   time.Duration
		run  bool
		wait time.Duration
	}{
		{0, false, 5 * time.Minute},
		{time.Minute, false, 4 * time.Minute},
		{5 * time.Minute, true, 0},
		{time.Hour, true, 0},
	} {
		if run, wait := r.due(t0.Add(tc.at)); run != tc.run || wait != tc.wait {
			t.Errorf("%v after the run: due = %v, %v; want %v, %v", tc.at, run, wait, tc.run, tc.wait)
		}
	}
	// A shorter interval counts from the last run, not from the change.
	r.Apply(config.Doctor{Enabled: true, Interval: time.Minute})
	if run, _ := r.due(t0.Add(2 * time.Minute)); !run {
		t.Error("interval shortened to 1m, 2m after the run: not due")
	}
}

// TestStartStopsWhileDue: a runner whose runs are always due (an
// interval of 0, which the config refuses but the type allows) still
// returns once its context ends.
func TestStartStopsWhileDue(t *testing.T) {
	var runs atomic.Int64
	r := countingRunner(&runs)
	r.Apply(config.Doctor{Enabled: true, Interval: 0})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Start(ctx); close(done) }()
	waitFor(t, "no run", func() bool { return runs.Load() >= 1 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return 10s after its context ended")
	}
}
