// Command rdmarun_exporter probes RDMA peers continuously and exposes the
// results, with every port's state and counters, to Prometheus. It also
// answers other nodes' probes (the responder of `rdmarun serve`), so
// every node can be both prober and target.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/exporter/collector"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/doctorcollector"
	"github.com/rdmarun/rdmarun/exporter/exposition"
	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/exporter/targets"
	buildversion "github.com/rdmarun/rdmarun/internal/version"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/sysfs"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	app := kingpin.New("rdmarun_exporter", "Probes RDMA peers continuously and exports latency, bandwidth, errors and port counters.")
	configFile := app.Flag("config.file", "Configuration file.").Default("rdmarun_exporter.yml").String()
	configCheck := app.Flag("config.check", "Check the configuration file and exit.").Bool()
	sysfsRoot := app.Flag("sysfs.root", "Where the kernel's RDMA devices are.").Default(sysfs.Root).String()
	deviceFlag := app.Flag("device", "Local RDMA device to probe from (default: the responder's device, else the first ACTIVE one); also the responder's when responder.device is not set.").String()
	sourceFlag := app.Flag("mesh.source", "This node's name: the source label of its probes, and how it finds itself among its targets. Name it as the other nodes' targets name it (default: mesh.source, else the host name).").String()
	// node_exporter's flag, with its default: the probes' round trips run
	// on threads of their own, outside this limit, and with one P the Go
	// scheduler wakes fewer threads around each probe (exporter CPU 8-20%
	// lower in the VM, docs/measurements.md#probe-cost).
	maxProcs := app.Flag("runtime.gomaxprocs", "The most threads that run Go code at once (GOMAXPROCS). The probes' round trips run on threads of their own, outside this limit.").Envar("GOMAXPROCS").Default("1").Int()
	webFlags := kingpinflag.AddFlags(app, ":10520")
	logConfig := &promslog.Config{}
	promslogflag.AddFlags(app, logConfig)
	// prometheus/common/version's output shape and build_info metric, with
	// the version and revision both binaries share.
	build := buildversion.Get()
	version.Version, version.Revision = build.Version, build.Revision
	app.Version(version.Print("rdmarun_exporter"))
	app.HelpFlag.Short('h')
	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "rdmarun_exporter: %v (see --help)\n", err)
		return 3
	}
	if *maxProcs < 1 {
		fmt.Fprintf(os.Stderr, "rdmarun_exporter: --runtime.gomaxprocs %d: want 1 or more\n", *maxProcs)
		return 3
	}
	// The name becomes a label value that the rules join with target
	// labels, which never hold white space.
	if strings.ContainsFunc(*sourceFlag, unicode.IsSpace) {
		fmt.Fprintf(os.Stderr, "rdmarun_exporter: --mesh.source %q holds white space; use the node's name as its targets list it\n", *sourceFlag)
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
	reg.MustRegister(versioncollector.NewCollector("rdmarun_exporter"), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sc := config.NewSafeConfig(reg)
	if err := sc.ReloadConfig(*configFile, logger); err != nil {
		logConfigError(logger, "invalid configuration", err, "file", *configFile)
		return 3
	}
	sc.RLock()
	cfg := sc.C
	sc.RUnlock()
	// The probes present the fleet's token too; without one they probe
	// responders that need none.
	token, _ := ctrl.ReadToken(cfg.Responder.TokenFile)
	if *configCheck {
		// A token file that cannot be read turns the responder off rather
		// than the daemon (port metrics and probes still work), but a
		// check names it as an error.
		off, err := checkResponder(cfg.Responder, *deviceFlag)
		if err != nil {
			logger.Error("invalid configuration", "file", *configFile, "err", err)
			return 3
		}
		if off != "" {
			logger.Warn("the responder will be off", "reason", off)
		}
		logger.Info("configuration is valid", "file", *configFile)
		return 0
	}
	runtime.GOMAXPROCS(*maxProcs)
	reg.MustRegister(collector.NewPortCollector(*sysfsRoot, logger))
	doc := doctorcollector.NewRunner(func() doctor.Env { return doctorEnv(*sysfsRoot) }, logger)
	doc.Apply(cfg.Doctor)
	reg.MustRegister(doctorcollector.NewCollector(doc))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Probes and answers may use different devices: a node can probe from
	// one NIC while its responder answers on another (responder.device);
	// named by neither, both take the first ACTIVE one.
	resp := newResponder(ctx, *deviceFlag, logger, reg)
	if err := resp.apply(cfg.Responder); err != nil && !isTokenError(err) {
		return 4
	}
	device := cmp.Or(*deviceFlag, cfg.Responder.Device)
	if device == "" {
		device = activeDevice()
	}
	id := targets.Identity{Source: *sourceFlag}
	if resp.serving() {
		id.Responder = cfg.Responder.Listen
	}
	probes := newTokenTransport(token, logger)
	// The probe metrics are registered on the /metrics handler, which
	// writes them itself (the registry's path cost 80 ms of CPU per
	// scrape at 1,000 targets) and gathers the rest from reg.
	scrape := exposition.NewHandler(reg)
	mgr := targets.NewManager(scrape, probes, device, id, logger)

	// The first scrape should see every target's series, so serving waits
	// for the first set (a DNS lookup that hangs costs its timeout).
	mgr.Apply(ctx, cfg)
	defer mgr.Stop()
	go doc.Start(ctx)

	// reload reads the file again and follows its targets; a bad file
	// keeps the old configuration, and its probes running. Reloads (SIGHUP
	// and HTTP at once) take turns, so the configuration applied last is
	// the one loaded last.
	var reloadMu sync.Mutex
	reload := func() error {
		reloadMu.Lock()
		defer reloadMu.Unlock()
		if err := sc.ReloadConfig(*configFile, logger); err != nil {
			logConfigError(logger, "reload failed; keeping the old configuration", err, "file", *configFile)
			return err
		}
		sc.RLock()
		cfg := sc.C
		sc.RUnlock()
		mgr.Apply(ctx, cfg)
		doc.Apply(cfg.Doctor)
		// The probes' token as the responder's: read again, and kept
		// when the file cannot be read.
		if t, err := ctrl.ReadToken(cfg.Responder.TokenFile); err == nil {
			probes.set(t)
		}
		err := resp.apply(cfg.Responder)
		logger.Info("configuration reloaded", "file", *configFile)
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				_ = reload()
			case <-ctx.Done():
				return
			}
		}
	}()

	mux := http.NewServeMux()
	mux.Handle("/metrics", scrape)
	// A handler per request, so that each probe presents the token in
	// force.
	mux.HandleFunc("/probe", func(w http.ResponseWriter, r *http.Request) {
		prober.NewHandler(sc, device, probes.get(), mgr.Source, logger).ServeHTTP(w, r)
	})
	// Liveness, as Prometheus and blackbox_exporter serve it: the HTTP
	// server runs. It waits for no peer, so a lone node is healthy too.
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("Healthy\n"))
	})
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST to reload the configuration", http.StatusMethodNotAllowed)
			return
		}
		if err := reload(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "rdmarun_exporter",
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
	logger.Info("starting rdmarun_exporter", "version", version.Info(), "device", device, "source", mgr.Source(), "gomaxprocs", *maxProcs)
	if err := web.ListenAndServe(srv, webFlags, logger); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("http server", "err", err)
		return 4
	}
	return 0
}

// doctorEnv is the host the doctor checks, with the ports' MTUs from the
// verbs interface (which sysfs lacks), read afresh for every run.
// logConfigError logs the problems of a configuration file one record
// each, so that each names one place in the file (file:line:col: key:
// what to write) on a line of its own rather than all of them joined.
func logConfigError(logger *slog.Logger, msg string, err error, attrs ...any) {
	var list yamlerr.List
	if !errors.As(err, &list) {
		logger.Error(msg, slices.Concat(attrs, []any{"err", err})...)
		return
	}
	for _, e := range list {
		logger.Error(msg, slices.Concat(attrs, []any{"err", e})...)
	}
}

func doctorEnv(sysfsRoot string) doctor.Env {
	return doctorcollector.EnvFor(sysfsRoot).WithVerbs(rdma.Devices)
}

// activeDevice is the device probes go from when none is named: the
// first with an ACTIVE port 1, as the responder chooses (peer.FirstActive),
// or "".
func activeDevice() string {
	devs, err := rdma.Devices()
	if err != nil {
		return ""
	}
	name, _ := rdma.FirstActive(devs, 1)
	return name
}
