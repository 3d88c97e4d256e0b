package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// serveCmd is the responder daemon: clients push whole test specs to it.
type serveCmd struct {
	listen    string
	cmPort    int
	noCM      bool
	device    string
	port      int
	gidIndex  string
	tokenFile string
	tls       ctrl.TLSConfig
	// dialCA turns on TLS for the tests this responder runs against
	// others on a coordinator's behalf, trusting this CA.
	dialCA        string
	maxTest       time.Duration
	maxConcurrent int
	maxSessions   int
	sessionIdle   time.Duration
	maxMemory     string
	maxQPs        int
	noRelay       bool
	logLevel      string
	metricsListen string
	// allowUnauthenticated is the operator's explicit word that a
	// responder on a network address may run without a token.
	allowUnauthenticated bool
}

func newServeCmd(app *kingpin.Application) *serveCmd {
	c := &serveCmd{}
	cmd := app.Command("serve", "Answer tests from rdmarun clients (the responder daemon). Clients send every test setting; the responder needs only its device.")
	cmd.Flag("listen", "Control channel address.").Default(":" + ctrl.DefaultPort).StringVar(&c.listen)
	cmd.Flag("cm-port", "Port to listen on for rdma_cm connections (tests with connect: rdma_cm), on every RDMA device's addresses; 0 lets the CM pick one. On iWARP it is a TCP port.").Default(strconv.Itoa(ctrl.DefaultCMPort)).IntVar(&c.cmPort)
	cmd.Flag("no-cm", "Do not listen for rdma_cm connections; tests with connect: rdma_cm are refused, naming this flag.").BoolVar(&c.noCM)
	cmd.Flag("device", "RDMA device to answer on (default: the first ACTIVE one); a client may ask for another.").StringVar(&c.device)
	cmd.Flag("port", "RDMA port.").Default("1").IntVar(&c.port)
	cmd.Flag("gid-index", "GID index, or auto.").Default("auto").StringVar(&c.gidIndex)
	addTokenFlag(cmd, &c.tokenFile)
	cmd.Flag("tls-cert", "Serve TLS with this certificate (PEM).").StringVar(&c.tls.CertFile)
	cmd.Flag("tls-key", "Private key of --tls-cert (PEM).").StringVar(&c.tls.KeyFile)
	cmd.Flag("tls-client-ca", "Require client certificates signed by this CA (PEM).").StringVar(&c.tls.CAFile)
	cmd.Flag("tls-ca", "Relayed tests (a coordinator asks this responder to test another): connect to the other responder with TLS, trusting this CA (PEM); --tls-cert and --tls-key, if given, are presented as the client certificate.").StringVar(&c.dialCA)
	cmd.Flag("no-relay", "Refuse relayed tests: a coordinator (rdmarun run of a fleet scenario) cannot have this responder test another on its behalf.").BoolVar(&c.noRelay)
	cmd.Flag("max-test", "Longest a test may hold the responder.").Default("10m").DurationVar(&c.maxTest)
	cmd.Flag("max-concurrent", "Tests served at once.").Default("4").IntVar(&c.maxConcurrent)
	cmd.Flag("max-sessions", "Sessions kept between runs for clients that probe again and again (rdmarun_exporter); a client beyond the limit is served one run at a time. An idle session holds its QPs and memory, not a test slot.").Default("256").IntVar(&c.maxSessions)
	cmd.Flag("max-memory", "Memory the responder registers for clients, for one test and for all tests and kept sessions together (e.g. 256MiB, 1GiB); a test that would pass it is refused, naming this flag.").Default("1GiB").StringVar(&c.maxMemory)
	cmd.Flag("max-qps", "QPs one test may use; a test with more is refused, naming this flag.").Default("64").IntVar(&c.maxQPs)
	cmd.Flag("session-idle", "Longest a kept session may wait for its next run.").Default("5m").DurationVar(&c.sessionIdle)
	cmd.Flag("metrics-listen", "Serve the responder's own metrics (Go runtime, process, tests served) at http://ADDR/metrics; off by default.").PlaceHolder("ADDR").StringVar(&c.metricsListen)
	cmd.Flag("log-level", "debug, info, warn or error.").Default("info").EnumVar(&c.logLevel, "debug", "info", "warn", "error")
	cmd.Flag("allow-unauthenticated", "Serve on a network address without a token or client certificates: anyone who connects gets rkeys to this host's registered memory.").BoolVar(&c.allowUnauthenticated)
	return c
}

func addTokenFlag(cmd *kingpin.CmdClause, dst *string) {
	cmd.Flag("token-file", "File holding the shared token (or set RDMARUN_TOKEN). The token is proved by challenge-response, never sent.").StringVar(dst)
}

// readToken is ctrl.ReadToken with the flag's name in its errors.
func readToken(file string) (string, error) {
	t, err := ctrl.ReadToken(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	return t, nil
}

func parseGID(s string) (int, error) {
	if s == "auto" {
		return rdma.AutoGIDIndex, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--gid-index %q: want auto or an index from `rdmarun devices`", s)
	}
	return n, nil
}

func (c *serveCmd) run(stderr io.Writer) error {
	cfg, err := c.settings()
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	level := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[c.logLevel]
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Logger = log
	r, err := peer.NewResponder(cfg)
	switch {
	case errors.Is(err, ctrl.ErrUnauthenticated):
		return &exitError{exitInvalid, fmt.Errorf("refusing to serve: %w. Create the fleet's token once with `rdmarun token FILE`, copy that file to every node and pass --token-file FILE; or listen on 127.0.0.1; or pass --allow-unauthenticated to serve anyway", err)}
	case err != nil:
		return &exitError{exitInvalid, err}
	}
	if err := r.Listen(); err != nil {
		return environmentError(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Registered before serving: a SIGHUP's default action ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go c.reloadOnHangup(ctx, hup, r, log)
	// SIGUSR1's default action ends the process too.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go dumpStacksOnSignal(ctx, usr1, os.Stderr)
	if err := c.serveMetrics(ctx, r.Server(), log); err != nil {
		return err
	}
	if err := r.Serve(ctx); err != nil {
		return &exitError{exitEnvironment, err}
	}
	served, failed := r.Server().Stats()
	log.Info("stopped", "tests", served, "failed", failed, "checks", r.Server().Checks())
	return nil
}

// settings checks the flags, each error naming its flag, and returns the
// responder they describe; the token, the TLS files and the device are
// the assembly's to check (peer.NewResponder, Listen).
func (c *serveCmd) settings() (peer.ResponderConfig, error) {
	gid, err := parseGID(c.gidIndex)
	if err != nil {
		return peer.ResponderConfig{}, err
	}
	maxMemory, err := c.checkLimits()
	if err != nil {
		return peer.ResponderConfig{}, err
	}
	maxSessions := c.maxSessions
	if maxSessions < 0 {
		return peer.ResponderConfig{}, fmt.Errorf("--max-sessions %d: want 0 (keep none) or more", maxSessions)
	}
	if maxSessions == 0 {
		maxSessions = -1 // none, where the library's 0 is its default
	}
	if c.sessionIdle <= 0 {
		return peer.ResponderConfig{}, fmt.Errorf("--session-idle %v: want a positive duration such as 5m", c.sessionIdle)
	}
	if c.cmPort < 0 || c.cmPort > 65535 {
		return peer.ResponderConfig{}, fmt.Errorf("--cm-port %d: want a port from 0 to 65535", c.cmPort)
	}
	cmPort := c.cmPort
	if c.noCM {
		cmPort = -1
	}
	return peer.ResponderConfig{
		Listen: c.listen, Device: c.device, Port: c.port, GIDIndex: gid,
		TokenFile: c.tokenFile, AllowUnauthenticated: c.allowUnauthenticated,
		TLS: c.tls, RelayCA: c.dialCA, NoRelay: c.noRelay, CMPort: cmPort,
		MaxTest: c.maxTest, MaxConcurrent: c.maxConcurrent, MaxSessions: maxSessions, MaxIdle: c.sessionIdle,
		MaxMemory: maxMemory, MaxQPs: c.maxQPs,
		Keys: peer.ServeKeys, Devices: listDevices,
	}, nil
}

// checkLimits checks the limits a client cannot exceed and returns
// --max-memory in bytes. Zero is refused rather than read as "the
// default" or "none": a responder that allows no memory, no QP, no time
// or no test serves nothing, and an unlimited one is what the limits are
// there to prevent.
func (c *serveCmd) checkLimits() (int64, error) {
	mem, err := units.ParseBytes(c.maxMemory)
	switch {
	case err != nil:
		return 0, fmt.Errorf("--max-memory: %w", err)
	case mem == 0 || mem > 1<<50:
		return 0, fmt.Errorf("--max-memory %s: want a positive size such as 1GiB", c.maxMemory)
	case c.maxQPs < 1:
		return 0, fmt.Errorf("--max-qps %d: want 1 or more", c.maxQPs)
	case c.maxTest <= 0:
		return 0, fmt.Errorf("--max-test %v: want a positive duration such as 10m", c.maxTest)
	case c.maxConcurrent < 1:
		return 0, fmt.Errorf("--max-concurrent %d: want 1 or more", c.maxConcurrent)
	}
	return int64(mem), nil
}

// reloadOnHangup reads the token file again on each SIGHUP (systemctl
// reload), so a fleet rotates its token without stopping the tests in
// flight. A file that cannot be read keeps the old token.
func (c *serveCmd) reloadOnHangup(ctx context.Context, hup <-chan os.Signal, r *peer.Responder, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if c.tokenFile == "" {
			log.Warn("SIGHUP: nothing to reload: no --token-file")
			continue
		}
		changed, err := r.ReloadToken(c.tokenFile)
		if err != nil {
			log.Error("SIGHUP: keeping the old token", "err", err)
			continue
		}
		log.Info("SIGHUP: token reloaded", "file", c.tokenFile, "changed", changed)
	}
}
