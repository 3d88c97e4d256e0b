// Command rdma_exporter probes RDMA peers continuously and exposes the
// results, with every port's state and counters, to Prometheus. It also
// answers other nodes' probes (the responder of `rdmarun serve`), so
// every node can be both prober and target.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/collector"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/discovery"
	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/sysfs"
	"github.com/rdmarun/rdmarun/units"
)

func main() { os.Exit(run(os.Args[1:])) }

// exporter holds what the HTTP handlers and the reload path share.
type exporter struct {
	cfg     *config.SafeConfig
	file    string
	device  string
	token   string
	logger  *slog.Logger
	sched   *prober.Scheduler
	metrics *prober.Metrics
	disc    *discovery.Metrics

	// reloadMu makes reloads (SIGHUP and HTTP at once) and the shutdown
	// take turns, so one discovery runs at a time.
	reloadMu   sync.Mutex
	disco      *discovery.Discoverer // the last one started
	discCancel context.CancelFunc
	discDone   chan struct{}

	mu   sync.Mutex
	runs map[string]*targetRun // by target name
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

func run(args []string) int {
	app := kingpin.New("rdma_exporter", "Probes RDMA peers continuously and exports latency, bandwidth, errors and port counters.")
	configFile := app.Flag("config.file", "Configuration file.").Default("rdma_exporter.yml").String()
	configCheck := app.Flag("config.check", "Check the configuration file and exit.").Bool()
	sysfsRoot := app.Flag("sysfs.root", "Where the kernel's RDMA devices are.").Default(sysfs.Root).String()
	device := app.Flag("device", "Local RDMA device to probe from (default: the responder's device, else the first ACTIVE one).").String()
	webFlags := kingpinflag.AddFlags(app, ":9879")
	logConfig := &promslog.Config{}
	promslogflag.AddFlags(app, logConfig)
	app.Version(version.Print("rdma_exporter"))
	app.HelpFlag.Short('h')
	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "rdma_exporter: %v (see --help)\n", err)
		return 3
	}
	logger := promslog.New(logConfig)
	// Checked before anything starts: serving would otherwise begin only to
	// fail later, and a broken file is bad input like a broken --config.file.
	if err := web.Validate(*webFlags.WebConfigFile); err != nil {
		logger.Error("invalid web configuration", "file", *webFlags.WebConfigFile, "err", err)
		return 3
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector("rdma_exporter"), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sc := config.NewSafeConfig(reg)
	if err := sc.ReloadConfig(*configFile, logger); err != nil {
		logger.Error("invalid configuration", "file", *configFile, "err", err)
		return 3
	}
	if *configCheck {
		logger.Info("configuration is valid", "file", *configFile)
		return 0
	}
	reg.MustRegister(collector.NewPortCollector(*sysfsRoot, logger))

	sc.RLock()
	cfg := sc.C
	sc.RUnlock()
	e := &exporter{cfg: sc, file: *configFile, logger: logger, runs: map[string]*targetRun{}}
	e.device = firstNonEmpty(*device, cfg.Responder.Device)
	if e.device == "" {
		e.device = activeDevice()
	}
	token, err := ctrl.ReadToken(cfg.Responder.TokenFile)
	if err != nil {
		logger.Error("token", "err", err)
		return 3
	}
	e.token = token
	e.metrics = prober.NewMetrics(reg)
	e.sched = prober.NewScheduler(reg, e.transport, e.metrics, cfg.Targets.Jitter, cfg.Targets.MaxProbesPerSecond, logger)
	e.disc = discovery.NewMetrics(reg)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Responder.Enabled && e.device != "" {
		if err := e.serveResponder(ctx, cfg); err != nil {
			logger.Error("responder", "err", err)
			return 4
		}
	}
	// The first scrape should see every target's series, so serving waits
	// for the first set (a DNS lookup that hangs costs its timeout).
	e.reloadMu.Lock()
	e.waitFirst(ctx, e.startDiscovery(ctx))
	e.reloadMu.Unlock()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				_ = e.reload(ctx)
			case <-ctx.Done():
				return
			}
		}
	}()

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("/probe", e.probeHandler)
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST to reload the configuration", http.StatusMethodNotAllowed)
			return
		}
		if err := e.reload(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "RDMA Exporter",
		Description: "Continuous RDMA probing of peers, and the state and counters of every RDMA port",
		Version:     version.Info(),
		Links: []web.LandingLinks{
			{Address: "/metrics", Text: "Metrics"},
			{Address: "/probe?target=HOST:18520&module=default", Text: "Probe", Description: "one probe on demand"},
		},
	})
	if err != nil {
		logger.Error("landing page", "err", err)
		return 1
	}
	mux.Handle("/", landing)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Info("starting rdma_exporter", "version", version.Info(), "device", e.device)
	if err := web.ListenAndServe(srv, webFlags, logger); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("http server", "err", err)
		e.shutdown()
		return 4
	}
	e.shutdown()
	return 0
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// activeDevice is the first device with an ACTIVE port 1, or "".
func activeDevice() string {
	devs, err := rdma.Devices()
	if err != nil {
		return ""
	}
	for _, d := range devs {
		if p, err := d.Port(1); err == nil && p.State == "ACTIVE" {
			return d.Name
		}
	}
	return ""
}

func (e *exporter) transport(ctx context.Context, p prober.Peer, spec rdma.TestSpec) (*rdma.Result, error) {
	return e.probe(ctx, p, spec, e.logger)
}

// probe runs one test against p, its steps logged to log at debug level.
func (e *exporter) probe(ctx context.Context, p prober.Peer, spec rdma.TestSpec, log *slog.Logger) (*rdma.Result, error) {
	dev := firstNonEmpty(p.Device, e.device)
	if dev == "" {
		return nil, rdma.ErrNoDevice
	}
	cc := peer.ClientConfig{Addr: p.Addr, Token: e.token, Device: dev, GIDIndex: rdma.AutoGIDIndex, StepTimeout: 5 * time.Second, Logger: log}
	if p.TLS != (ctrl.TLSConfig{}) {
		// Read at every probe, so renewed certificates take effect
		// without a reload; the files are small and probes are seconds
		// apart.
		tlsCfg, err := p.TLS.ClientConfig()
		if err != nil {
			return nil, err
		}
		cc.TLS = tlsCfg
	}
	return peer.Run(ctx, cc, spec)
}

// jobs lists a target's jobs: one per spec of its module.
func (e *exporter) jobs(cfg *config.Config, t config.Target) []prober.Job {
	var out []prober.Job
	m := cfg.Modules[t.Module]
	for _, spec := range m.Specs() {
		interval := m.Interval
		if spec.Measure == rdma.MeasureBandwidth && m.Bandwidth != nil {
			interval = m.Bandwidth.Interval
		}
		k := prober.Key{Device: firstNonEmpty(t.Device, e.device), Port: 1, Target: t.Name, Op: spec.Op, Size: spec.WithDefaults().Size, Mode: spec.Mode}
		p := prober.Peer{Addr: t.Address, Device: k.Device, TLS: m.TLS.Ctrl()}
		out = append(out, prober.Job{Key: k, Peer: p, Spec: spec, Interval: interval, Timeout: m.Timeout})
	}
	return out
}

// startDiscovery follows the targets of the current configuration, the
// probes following every change of the set; the channel closes once the
// first set's probes have started. The caller holds reloadMu.
func (e *exporter) startDiscovery(ctx context.Context) <-chan struct{} {
	e.cfg.RLock()
	cfg := e.cfg.C
	e.cfg.RUnlock()
	// The last answers of the discovery before carry over, so that a file
	// or name failing just after a reload keeps its targets.
	d := discovery.New(cfg, discovery.WithLogger(e.logger), discovery.WithMetrics(e.disc), discovery.WithPrevious(e.disco))
	e.disco = d
	dctx, cancel := context.WithCancel(ctx)
	done, first := make(chan struct{}), make(chan struct{})
	e.discCancel, e.discDone = cancel, done
	go func() {
		defer close(done)
		var once sync.Once
		d.Run(dctx, func(ts []config.Target) {
			// ctx, not dctx: the probes outlive this discovery, which a
			// reload replaces.
			e.setTargets(ctx, cfg, ts)
			once.Do(func() { close(first) })
		})
	}()
	return first
}

// stopDiscovery ends the running discovery; once it returns, no more
// target sets come from it. The caller holds reloadMu.
func (e *exporter) stopDiscovery() {
	if e.discCancel != nil {
		e.discCancel()
		<-e.discDone
		e.discCancel, e.discDone = nil, nil
	}
}

// waitFirst waits, boundedly, for a discovery's first target set.
func (e *exporter) waitFirst(ctx context.Context, first <-chan struct{}) {
	t := time.NewTimer(firstTargetsWait)
	defer t.Stop()
	select {
	case <-first:
	case <-ctx.Done():
	case <-t.C:
		e.logger.Warn("no targets discovered yet; serving without them", "waited", firstTargetsWait)
	}
}

// setTargets makes the probes follow a new target set. A target whose
// jobs are unchanged keeps running undisturbed; the others stop (each
// within its probe timeout), the series of keys no longer probed are
// deleted, so that a removed target disappears instead of showing its last
// values forever, and new targets start with their series at zero.
func (e *exporter) setTargets(ctx context.Context, cfg *config.Config, targets []config.Target) {
	want := make(map[string][]prober.Job, len(targets))
	keep := map[prober.Key]bool{}
	for _, t := range targets {
		jobs := e.jobs(cfg, t)
		want[t.Name] = jobs
		for _, j := range jobs {
			keep[j.Key] = true
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var stopped []*targetRun
	for name, r := range e.runs {
		if jobs, ok := want[name]; ok && reflect.DeepEqual(jobs, r.jobs) {
			continue
		}
		r.cancel()
		stopped = append(stopped, r)
		delete(e.runs, name)
	}
	// Forgotten only once stopped, or a probe in flight would create the
	// series again.
	for _, r := range stopped {
		<-r.done
		for _, j := range r.jobs {
			if !keep[j.Key] {
				e.metrics.Forget(j.Key)
			}
		}
	}
	for name, jobs := range want {
		if e.runs[name] != nil {
			continue
		}
		// Created here rather than by the scheduler's goroutine, so that
		// they exist when the caller goes on to serve.
		for _, j := range jobs {
			e.metrics.Init(j.Key, j.Spec.Measure == rdma.MeasureBandwidth)
		}
		rctx, cancel := context.WithCancel(ctx)
		r := &targetRun{jobs: jobs, cancel: cancel, done: make(chan struct{})}
		e.runs[name] = r
		go func() {
			defer close(r.done)
			e.sched.Run(rctx, jobs)
		}()
	}
}

// stopProbes stops every target's probes and waits for them.
func (e *exporter) stopProbes() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.runs {
		r.cancel()
	}
	for name, r := range e.runs {
		<-r.done
		delete(e.runs, name)
	}
}

// shutdown stops discovery first, so that no new set restarts the probes
// it then stops.
func (e *exporter) shutdown() {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.stopDiscovery()
	e.stopProbes()
}

// reload reads the configuration again and follows its targets; a bad
// file keeps the old one, and its probes running. It returns once the new
// configuration's targets are probed, so what a caller reads from
// /metrics afterwards is the new configuration's.
func (e *exporter) reload(ctx context.Context) error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	if err := e.cfg.ReloadConfig(e.file, e.logger); err != nil {
		e.logger.Error("reload failed; keeping the old configuration", "err", err)
		return err
	}
	e.cfg.RLock()
	e.sched.SetLimits(e.cfg.C.Targets.Jitter, e.cfg.C.Targets.MaxProbesPerSecond)
	e.cfg.RUnlock()
	// The old probes go on until the new discovery's first set replaces
	// them, so a reload leaves no gap in probing.
	e.stopDiscovery()
	e.waitFirst(ctx, e.startDiscovery(ctx))
	e.logger.Info("configuration reloaded", "file", e.file)
	return nil
}

func (e *exporter) serveResponder(ctx context.Context, cfg *config.Config) error {
	var tlsCfg *tls.Config
	if cfg.Responder.TLS.CertFile != "" {
		var err error
		tlsCfg, err = ctrl.TLSConfig{CertFile: cfg.Responder.TLS.CertFile, KeyFile: cfg.Responder.TLS.KeyFile, CAFile: cfg.Responder.TLS.ClientCAFile}.ServerConfig()
		if err != nil {
			return err
		}
	}
	srv, err := peer.NewServer(peer.ServerConfig{Device: e.device, GIDIndex: rdma.AutoGIDIndex, Token: e.token, Logger: e.logger})
	if err != nil {
		return err
	}
	ln, err := ctrl.Listen(cfg.Responder.Listen, tlsCfg)
	if err != nil {
		return err
	}
	go func() {
		if err := srv.Serve(ctx, ln); err != nil {
			e.logger.Error("responder stopped", "err", err)
		}
	}()
	e.logger.Info("responder listening", "address", ln.Addr().String(), "device", e.device)
	return nil
}

// probeHandler runs one probe on demand, blackbox style: its metrics go
// into a registry of their own and back in the response. With debug=true
// the response is instead the probe's log, step by step, then the metrics
// and the module, as text for a person.
func (e *exporter) probeHandler(w http.ResponseWriter, r *http.Request) {
	target, module := r.URL.Query().Get("target"), r.URL.Query().Get("module")
	debug := r.URL.Query().Get("debug") == "true"
	if target == "" || module == "" {
		http.Error(w, "want target=HOST:PORT and module=NAME", http.StatusBadRequest)
		return
	}
	e.cfg.RLock()
	m, ok := e.cfg.C.Modules[module]
	e.cfg.RUnlock()
	if !ok {
		http.Error(w, fmt.Sprintf("unknown module %q", module), http.StatusBadRequest)
		return
	}
	reg := prometheus.NewRegistry()
	metrics := prober.NewMetrics(reg)
	var logBuf bytes.Buffer
	log := e.logger
	if debug {
		log = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	tr := func(ctx context.Context, p prober.Peer, spec rdma.TestSpec) (*rdma.Result, error) {
		return e.probe(ctx, p, spec, log)
	}
	for _, spec := range m.Specs() {
		if spec.Measure == rdma.MeasureBandwidth {
			continue // bandwidth probes are long; they run on their own schedule only
		}
		k := prober.Key{Device: e.device, Port: 1, Target: target, Op: spec.Op, Size: spec.WithDefaults().Size, Mode: spec.Mode}
		metrics.Init(k, false)
		p := prober.Peer{Addr: target, Device: e.device, TLS: m.TLS.Ctrl()}
		log.Debug("probe", "target", target, "module", module, "spec", spec.String(), "timeout", m.Timeout)
		start := time.Now()
		if err := prober.ProbeRDMA(r.Context(), tr, metrics, k, p, spec, m.Timeout); err != nil {
			log.Debug("probe failed", "target", target, "module", module, "took", time.Since(start), "err", err)
		} else {
			log.Debug("probe succeeded", "target", target, "module", module, "took", time.Since(start))
		}
	}
	if !debug {
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Logs for the probe:\n%s\n\nMetrics that would have been returned:\n", logBuf.String())
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Fprintf(w, "gathering them failed: %v\n", err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return
		}
	}
	fmt.Fprintf(w, "\n\nModule %q:\n%s", module, describeModule(m))
}

// describeModule writes a module out for a person reading a debug probe,
// with units, the way the config file spells it.
func describeModule(m config.Module) string {
	var b strings.Builder
	sizes := make([]string, len(m.Sizes))
	for i, s := range m.Sizes {
		sizes[i] = units.FormatBytes(uint64(s))
	}
	fmt.Fprintf(&b, "  op: %s\n  mode: %s\n  sizes: [%s]\n  count: %d\n  interval: %v\n  timeout: %v\n",
		m.Op, m.Mode, strings.Join(sizes, ", "), m.Count, m.Interval, m.Timeout)
	fmt.Fprintf(&b, "  qp: {type: %s, timeout: %d, retry_cnt: %d, rnr_retry: %d, mtu: %d}  # 0: the default\n",
		m.QP.Type, m.QP.Timeout, m.QP.RetryCnt, m.QP.RNRRetry, m.QP.MTU)
	if bw := m.Bandwidth; bw != nil {
		fmt.Fprintf(&b, "  bandwidth: {size: %s, duration: %v, interval: %v, tx_depth: %d}\n",
			units.FormatBytes(uint64(bw.Size)), bw.Duration, bw.Interval, bw.TxDepth)
	}
	if t := m.TLS; t.Enabled() {
		fmt.Fprintf(&b, "  tls: {ca_file: %q, cert_file: %q, server_name: %q, insecure_skip_verify: %t}\n",
			t.CAFile, t.CertFile, t.ServerName, t.InsecureSkipVerify)
	}
	return b.String()
}
