// Command rdma_exporter probes RDMA peers continuously and exposes the
// results, with every port's state and counters, to Prometheus. It also
// answers other nodes' probes (the responder of `rdmarun serve`), so
// every node can be both prober and target.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/collector"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
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

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func run(args []string) int {
	app := kingpin.New("rdma_exporter", "Probes RDMA peers continuously and exports latency, bandwidth, errors and port counters.")
	configFile := app.Flag("config.file", "Configuration file.").Default("rdma_exporter.yml").String()
	configCheck := app.Flag("config.check", "Check the configuration file and exit.").Bool()
	sysfsRoot := app.Flag("sysfs.root", "Where the kernel's RDMA devices are.").Default(rdma.SysfsRoot).String()
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
	e := &exporter{cfg: sc, file: *configFile, logger: logger}
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Responder.Enabled && e.device != "" {
		if err := e.serveResponder(ctx, cfg); err != nil {
			logger.Error("responder", "err", err)
			return 4
		}
	}
	e.start(ctx)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
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
		return 4
	}
	e.stopProbes()
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

func (e *exporter) transport(ctx context.Context, target string, spec rdma.TestSpec) (*rdma.Result, error) {
	if e.device == "" {
		return nil, rdma.ErrNoDevice
	}
	return peer.Run(ctx, peer.ClientConfig{Addr: target, Token: e.token, Device: e.device, GIDIndex: rdma.AutoGIDIndex, StepTimeout: 5 * time.Second}, spec)
}

// jobs lists one job per static target, module spec and size.
func (e *exporter) jobs(cfg *config.Config) []prober.Job {
	var out []prober.Job
	for _, t := range cfg.Targets.Static {
		m := cfg.Modules[t.Module]
		for _, spec := range m.Specs() {
			interval := m.Interval
			if spec.Measure == rdma.MeasureBandwidth && m.Bandwidth != nil {
				interval = m.Bandwidth.Interval
			}
			k := prober.Key{Device: firstNonEmpty(t.Device, e.device), Port: 1, Target: t.Name, Op: spec.Op, Size: spec.WithDefaults().Size, Mode: spec.Mode}
			out = append(out, prober.Job{Key: k, Target: t.Address, Spec: spec, Interval: interval, Timeout: m.Timeout})
		}
	}
	return out
}

// start runs the scheduler on the current configuration's jobs.
func (e *exporter) start(parent context.Context) {
	e.cfg.RLock()
	jobs := e.jobs(e.cfg.C)
	e.cfg.RUnlock()
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	e.mu.Lock()
	e.cancel, e.done = cancel, done
	e.mu.Unlock()
	go func() {
		defer close(done)
		e.sched.Run(ctx, jobs)
	}()
}

func (e *exporter) stopProbes() {
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// reload reads the configuration again; a bad file keeps the old one and
// its probes running.
func (e *exporter) reload(ctx context.Context) error {
	if err := e.cfg.ReloadConfig(e.file, e.logger); err != nil {
		e.logger.Error("reload failed; keeping the old configuration", "err", err)
		return err
	}
	e.stopProbes()
	e.start(ctx)
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
// into a registry of their own and back in the response.
func (e *exporter) probeHandler(w http.ResponseWriter, r *http.Request) {
	target, module := r.URL.Query().Get("target"), r.URL.Query().Get("module")
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
	for _, spec := range m.Specs() {
		if spec.Measure == rdma.MeasureBandwidth {
			continue // bandwidth probes are long; they run on their own schedule only
		}
		k := prober.Key{Device: e.device, Port: 1, Target: target, Op: spec.Op, Size: spec.WithDefaults().Size, Mode: spec.Mode}
		metrics.Init(k, false)
		if err := prober.ProbeRDMA(r.Context(), e.transport, metrics, k, target, spec, m.Timeout); err != nil {
			e.logger.Debug("probe failed", "target", target, "module", module, "err", err)
		}
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
