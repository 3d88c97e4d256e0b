// Package targets keeps rdmarun_exporter's probes in step with its targets:
// a Manager follows the discovery of the configuration it was last given,
// and runs each discovered target's probes on their schedules, apart from
// the others'.
package targets

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/discovery"
	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/rdma"
)

// Manager runs the probes of the targets a configuration discovers.
type Manager struct {
	device      string
	id          Identity
	logger      *slog.Logger
	sched       *prober.Scheduler
	metrics     *prober.Metrics
	disc        *discovery.Metrics
	meshMetrics *meshMetrics
	bounds      *boundMetrics

	// applyMu makes Apply and Stop take turns, so one discovery runs at
	// a time.
	applyMu    sync.Mutex
	stopped    bool                  // by Stop, for good
	disco      *discovery.Discoverer // the last one started
	discCancel context.CancelFunc
	discDone   chan struct{}

	// selMu makes discovery's new sets and the mesh's epoch changes take
	// turns; discovered is the last set discovery gave.
	selMu      sync.Mutex
	discovered []config.Target

	mu     sync.Mutex
	runs   map[string]*targetRun // by target name
	source string                // the source label of the probes running
}

// targetRun is the probing of one target. Targets run apart so that a
// change of the target set leaves the others' schedules alone: restarting
// every job would push back each slow (bandwidth) probe by a new random
// first delay at every DNS change.
type targetRun struct {
	jobs   []prober.Job
	cancel context.CancelFunc
	done   chan struct{}
}

// firstTargetsWait bounds the wait for a discovery's first target set. It
// comes within discovery's lookup timeout; the bound only keeps a bug there
// from stopping the exporter from serving.
const firstTargetsWait = 30 * time.Second

// NewManager registers the probe, scheduler, discovery, mesh and bound metrics
// on reg. Probes go through tr, from device unless a target names its
// own; id says which of the targets is this node. Nothing runs before the
// first Apply.
func NewManager(reg prometheus.Registerer, tr prober.Transport, device string, id Identity, logger *slog.Logger) *Manager {
	metrics := prober.NewMetrics(reg)
	return &Manager{
		device:  device,
		id:      id,
		logger:  logger,
		metrics: metrics,
		// The configuration's limits come with Apply, before any job.
		sched:       prober.NewScheduler(reg, tr, metrics, 0, 0, logger),
		disc:        discovery.NewMetrics(reg),
		meshMetrics: newMeshMetrics(reg),
		bounds:      newBoundMetrics(reg),
		runs:        map[string]*targetRun{},
	}
}

// Apply makes the probes follow cfg: its scheduling limits, and the
// targets its discovery finds from now on. The targets of the
// configuration before go on being probed until the new discovery's first
// set replaces them, so a reload leaves no gap in probing; Apply returns
// once that set is probed (or after a bounded wait), so what a caller
// reads from /metrics afterwards is cfg's. The probes run until ctx ends
// or Stop; after Stop, Apply does nothing.
func (m *Manager) Apply(ctx context.Context, cfg *config.Config) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	if m.stopped {
		return
	}
	m.sched.SetLimits(cfg.Targets.Jitter, cfg.Targets.MaxProbesPerSecond, cfg.Mesh.MaxProbesPerSecond)
	m.stopDiscovery()
	m.waitFirst(ctx, m.startDiscovery(ctx, cfg))
}

// Stop ends discovery, then every target's probes, and waits for them.
// Discovery goes first, so that no new set restarts the probes it then
// stops.
func (m *Manager) Stop() {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.stopped = true
	m.stopDiscovery()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		r.cancel()
	}
	for name, r := range m.runs {
		<-r.done
		delete(m.runs, name)
	}
}

// startDiscovery follows the targets of cfg, the probes following every
// change of the set; the channel closes once the first set's probes have
// started. The caller holds applyMu.
func (m *Manager) startDiscovery(ctx context.Context, cfg *config.Config) <-chan struct{} {
	// The last answers of the discovery before carry over, so that a file
	// or name failing just after a reload keeps its targets.
	d := discovery.New(cfg, discovery.WithLogger(m.logger), discovery.WithMetrics(m.disc), discovery.WithPrevious(m.disco))
	m.disco = d
	dctx, cancel := context.WithCancel(ctx)
	done, first := make(chan struct{}), make(chan struct{})
	m.discCancel, m.discDone = cancel, done
	m.selMu.Lock()
	m.discovered = nil // the last set came with another config's modules
	m.selMu.Unlock()
	go func() {
		defer close(done)
		var once sync.Once
		var rotating sync.WaitGroup
		if cfg.Mesh.Enabled() {
			rotating.Go(func() { m.rotate(dctx, ctx, cfg) })
		}
		d.Run(dctx, func(ts []config.Target) {
			// ctx, not dctx: the probes outlive this discovery, which the
			// next Apply replaces.
			m.follow(ctx, cfg, ts)
			once.Do(func() { close(first) })
		})
		rotating.Wait()
	}()
	return first
}

// stopDiscovery ends the running discovery; once it returns, no more
// target sets come from it. The caller holds applyMu.
func (m *Manager) stopDiscovery() {
	if m.discCancel != nil {
		m.discCancel()
		<-m.discDone
		m.discCancel, m.discDone = nil, nil
	}
}

// waitFirst waits, boundedly, for a discovery's first target set.
func (m *Manager) waitFirst(ctx context.Context, first <-chan struct{}) {
	t := time.NewTimer(firstTargetsWait)
	defer t.Stop()
	select {
	case <-first:
	case <-ctx.Done():
	case <-t.C:
		m.logger.Warn("no targets discovered yet; serving without them", "waited", firstTargetsWait)
	}
}

// setTargets makes the probes follow a new target set, as much of it as
// the config's bounds allow (bound). A target whose jobs are unchanged
// keeps running undisturbed; the others stop (each within its probe
// timeout), the series of keys no longer probed are deleted, so that a
// removed target disappears instead of showing its last values forever,
// and new targets start with their series at zero.
func (m *Manager) setTargets(ctx context.Context, cfg *config.Config, targets []config.Target, source string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	targets = m.bound(cfg, targets, func(name string) bool { return m.runs[name] != nil })
	want := make(map[string][]prober.Job, len(targets))
	keep := map[prober.Key]bool{}
	for _, t := range targets {
		js := jobs(cfg, t, m.device, source)
		want[t.Name] = js
		for _, j := range js {
			keep[j.Key] = true
		}
	}
	m.source = source
	var stopped []*targetRun
	for name, r := range m.runs {
		if js, ok := want[name]; ok && reflect.DeepEqual(js, r.jobs) {
			continue
		}
		r.cancel()
		stopped = append(stopped, r)
		delete(m.runs, name)
	}
	// Forgotten only once stopped, or a probe in flight would create the
	// series again.
	stopping := time.Now()
	for _, r := range stopped {
		<-r.done
		for _, j := range r.jobs {
			if !keep[j.Key] {
				m.metrics.Forget(j.Key)
			}
		}
	}
	started := 0
	for name, js := range want {
		if m.runs[name] != nil {
			continue
		}
		started++
		// Created here rather than by the scheduler's goroutine, so that
		// they exist when the caller goes on to serve.
		for _, j := range js {
			m.metrics.Init(j.Key, j.Spec.Measure == rdma.MeasureBandwidth)
		}
		rctx, cancel := context.WithCancel(ctx)
		r := &targetRun{jobs: js, cancel: cancel, done: make(chan struct{})}
		m.runs[name] = r
		go func() {
			defer close(r.done)
			m.sched.Run(rctx, js)
		}()
	}
	if len(stopped) > 0 || started > 0 {
		// How long the stopped ones took says whether a probe in flight
		// holds back the next change of the set.
		m.logger.Debug("targets changed", "started", started, "stopped", len(stopped), "probed", len(m.runs), "stopping_took", time.Since(stopping))
	}
}
