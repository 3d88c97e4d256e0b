package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/report"
)

// scenarioCmd runs (or only validates) YAML scenarios.
type scenarioCmd struct {
	files      []string
	sets       []string
	device     string
	port       int
	gidIndex   string
	peer       string
	peerDevice string
	tokenFile  string
	tls        ctrl.TLSConfig
	jsonOut    string
	junitOut   string
	htmlOut    string
	quiet      bool
}

func newScenarioCmds(app *kingpin.Application) (run, validate *scenarioCmd) {
	run, validate = &scenarioCmd{}, &scenarioCmd{}
	rc := app.Command("run", "Run YAML scenarios (the default: `rdmarun FILE...`).").Default()
	rc.Arg("file", "Scenario files.").Required().StringsVar(&run.files)
	run.addSets(rc)
	rc.Flag("device", "Override the scenario's device.").StringVar(&run.device)
	rc.Flag("port", "Override the scenario's port.").IntVar(&run.port)
	rc.Flag("gid-index", "Override the scenario's GID index (auto or a number).").StringVar(&run.gidIndex)
	rc.Flag("peer", "Override the scenario's peer: loopback or HOST[:PORT] of rdmarun serve.").StringVar(&run.peer)
	rc.Flag("peer-device", "Override the responder's device (loopback: the second device).").StringVar(&run.peerDevice)
	addTokenFlag(rc, &run.tokenFile)
	rc.Flag("tls-ca", "Connect with TLS, trusting this CA (PEM).").StringVar(&run.tls.CAFile)
	rc.Flag("tls-cert", "Client certificate for TLS (PEM).").StringVar(&run.tls.CertFile)
	rc.Flag("tls-key", "Private key of --tls-cert (PEM).").StringVar(&run.tls.KeyFile)
	rc.Flag("json", "Write the versioned JSON results here.").StringVar(&run.jsonOut)
	rc.Flag("junit", "Write JUnit XML here (one testcase per case x size x qps x mode).").StringVar(&run.junitOut)
	rc.Flag("html", "Write a self-contained HTML report here.").StringVar(&run.htmlOut)
	rc.Flag("quiet", "Print only the summary and failures.").BoolVar(&run.quiet)
	vc := app.Command("validate", "Check scenarios without running them.")
	vc.Arg("file", "Scenario files.").Required().StringsVar(&validate.files)
	validate.addSets(vc)
	return run, validate
}

func (c *scenarioCmd) addSets(cmd *kingpin.CmdClause) {
	cmd.Flag("set", "Set a scenario variable: --set iters=100 (repeatable).").StringsVar(&c.sets)
}

func (c *scenarioCmd) overrides() (map[string]string, error) {
	m := map[string]string{}
	for _, s := range c.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want NAME=VALUE", s)
		}
		m[k] = v
	}
	return m, nil
}

func (c *scenarioCmd) load() ([]*runner.Scenario, error) {
	ov, err := c.overrides()
	if err != nil {
		return nil, err
	}
	var out []*runner.Scenario
	var errs []error
	for _, f := range c.files {
		if _, err := os.Stat(f); err != nil && !strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, ".yml") {
			errs = append(errs, fmt.Errorf("%q is neither a command nor a scenario file (see rdmarun --help)", f))
			continue
		}
		sc, err := runner.Load(f, ov)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, sc)
	}
	return out, errors.Join(errs...)
}

func (c *scenarioCmd) validate(w io.Writer) error {
	scs, err := c.load()
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	for i, sc := range scs {
		n := len(sc.Runs())
		plural := "s"
		if n == 1 {
			plural = ""
		}
		fmt.Fprintf(w, "%s: scenario %s is valid: %d run%s\n", c.files[i], sc.Name, n, plural)
	}
	return nil
}

// run executes every scenario and writes the outputs. The exit code is
// the worst over all scenarios: errors (5) over failures (1).
func (c *scenarioCmd) run(stdout, stderr io.Writer) error {
	scs, err := c.load()
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	worst := exitOK
	var reports []*report.Report
	for i, sc := range scs {
		target, err := c.target(sc)
		if err != nil {
			return err
		}
		rep, err := runner.Execute(ctx, sc, target, runner.Options{
			Tool: "rdmarun " + version, File: c.files[i], Progress: c.progress(stderr),
		})
		target.Close()
		if err != nil {
			return &exitError{exitInvalid, fmt.Errorf("%s: %w", c.files[i], err)}
		}
		reports = append(reports, rep)
		if !c.quiet || rep.Summary.Failed+rep.Summary.Errors > 0 {
			if err := report.Text(stdout, rep); err != nil {
				return err
			}
		}
		worst = worse(worst, runner.ExitStatus(rep))
		if ctx.Err() != nil {
			break
		}
	}
	// Results gathered so far are written even after Ctrl-C.
	if err := c.write(reports); err != nil {
		return &exitError{exitEnvironment, err}
	}
	if worst != exitOK {
		return &exitError{worst, fmt.Errorf("%s", map[int]string{exitFailed: "a threshold failed", exitAborted: "a run did not finish", exitEnvironment: "the environment is unusable"}[worst])}
	}
	return nil
}

func worse(a, b int) int {
	rank := map[int]int{exitOK: 0, exitFailed: 1, exitAborted: 2, exitEnvironment: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// write saves the reports; with several scenarios the file name gets the
// scenario's name before its extension.
func (c *scenarioCmd) write(reports []*report.Report) error {
	for _, out := range []struct {
		path  string
		write func(io.Writer, *report.Report) error
	}{{c.jsonOut, report.JSON}, {c.junitOut, report.JUnit}, {c.htmlOut, report.HTML}} {
		if out.path == "" {
			continue
		}
		for _, rep := range reports {
			path := out.path
			if len(reports) > 1 {
				ext := ""
				if i := strings.LastIndex(path, "."); i > strings.LastIndex(path, "/") {
					path, ext = path[:i], path[i:]
				}
				path = path + "-" + rep.Scenario + ext
			}
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			err = out.write(f, rep)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
		}
	}
	return nil
}

// progress prints one line per run: on a terminal it rewrites the line,
// in CI it prints plain lines a log keeps.
func (c *scenarioCmd) progress(w io.Writer) func(int, int, *report.Run) {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return func(done, total int, r *report.Run) {
		if r.Status == "" {
			if tty {
				fmt.Fprintf(w, "\r\033[K[%d/%d] %s %s ...", done+1, total, r.Case, r.Label())
			}
			return
		}
		if tty {
			fmt.Fprintf(w, "\r\033[K")
			if done == total {
				return
			}
			return
		}
		fmt.Fprintf(w, "run %d/%d: %s %s: %s (%.1f s)\n", done, total, r.Case, r.Label(), r.Status, r.Seconds)
	}
}

// target builds where the scenario runs, flags over the scenario's own
// settings.
func (c *scenarioCmd) target(sc *runner.Scenario) (runner.Target, error) {
	local := runner.Endpoint{Device: sc.Device, Port: sc.Port, GIDIndex: sc.GIDIndex}
	if c.device != "" {
		local.Device = c.device
	}
	if c.port != 0 {
		local.Port = c.port
	}
	if c.gidIndex != "" {
		g, err := parseGID(c.gidIndex)
		if err != nil {
			return nil, &exitError{exitInvalid, err}
		}
		local.GIDIndex = g
	}
	if local.Device == "" || local.Device == "auto" {
		d, err := firstActiveDevice(max(local.Port, 1))
		if err != nil {
			return nil, err
		}
		local.Device = d
	}
	peer, peerDev := sc.Peer, sc.PeerDevice
	if c.peer != "" {
		peer = c.peer
	}
	if c.peerDevice != "" {
		peerDev = c.peerDevice
	}
	if peer == "" || peer == "loopback" {
		if peerDev == "" {
			peerDev = local.Device
		}
		return &runner.Loopback{Local: local, Peer: runner.Endpoint{Device: peerDev, Port: local.Port, GIDIndex: local.GIDIndex}, MaxMessage: sc.MaxSize()}, nil
	}
	tokenFile := sc.TokenFile
	if c.tokenFile != "" {
		tokenFile = c.tokenFile
	}
	token, err := readToken(tokenFile)
	if err != nil {
		return nil, &exitError{exitInvalid, err}
	}
	r := &runner.Remote{Addr: peer, Local: local, PeerDevice: peerDev, Token: token}
	if local.GIDIndex != rdma.AutoGIDIndex {
		g := local.GIDIndex
		r.PeerGID = &g
	}
	tlsCfg := sc.TLS
	if c.tls != (ctrl.TLSConfig{}) {
		tlsCfg = &c.tls
	}
	if tlsCfg != nil {
		if r.TLS, err = tlsCfg.ClientConfig(); err != nil {
			return nil, &exitError{exitInvalid, err}
		}
	}
	return r, nil
}
