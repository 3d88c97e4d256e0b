package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	buildversion "github.com/rdmarun/rdmarun/internal/version"
	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/report"
)

// outputs are where a run's report goes, for scenarios and bench alike.
type outputs struct {
	json, junit, html string
	// runs is --runs: not one of set's, as it streams while the
	// scenario runs and stdout does not take it.
	runs    string
	runsSet bool
	// resume is --resume, of rdmarun run: an interrupted run's runs file.
	resume  string
	quiet   bool
	verbose bool
	// set records which outputs were given: kingpin hands a lone "-" over
	// as "", so a given output with an empty path means stdout.
	set [3]bool
	// text writes the report to the terminal: TextOptions.Text for
	// scenarios, TextOptions.Compact for one bench test.
	text func(report.TextOptions, io.Writer, *report.Report) error
	// save is --save-baseline, of rdmarun run.
	save saveBaseline
}

func (o *outputs) addFlags(cmd *kingpin.CmdClause) {
	cmd.Flag("json", "Write the versioned JSON results here (- for stdout).").IsSetByUser(&o.set[0]).StringVar(&o.json)
	cmd.Flag("junit", "Write JUnit XML here (one testcase per case x size x qps x mode; - for stdout).").IsSetByUser(&o.set[1]).StringVar(&o.junit)
	cmd.Flag("html", "Write a self-contained HTML report here (- for stdout).").IsSetByUser(&o.set[2]).StringVar(&o.html)
	cmd.Flag("runs", "Stream each run's result here as it finishes: JSON Lines (schema rdmarun.runs/v1), a header line, then one line per run as in the JSON report's runs; a crash or Ctrl-C keeps every finished run. Several scenarios: a file each, named as for --json.").PlaceHolder("FILE").IsSetByUser(&o.runsSet).StringVar(&o.runs)
	cmd.Flag("quiet", "Print only the summary and failures.").BoolVar(&o.quiet)
	cmd.Flag("verbose", "Print every side's counters for every run, the zero ones and the ones its drivers do not count (by default only the counters that moved; --json, --junit and --html always hold them all).").BoolVar(&o.verbose)
}

// execute runs each scenario on its target, prints and writes the
// reports, and returns the exit code's error: the worst over all
// scenarios, errors (5) over failures (1).
func execute(stdout, stderr io.Writer, scs []*runner.Scenario, files []string, at *where, out *outputs) error {
	for i, p := range []*string{&out.json, &out.junit, &out.html} {
		if out.set[i] && *p == "" {
			*p = "-"
		}
	}
	if out.runsSet && (out.runs == "" || out.runs == "-") {
		return &exitError{exitInvalid, errRunsStdout}
	}
	if out.resume != "" && len(scs) > 1 {
		return &exitError{exitInvalid, errors.New("--resume takes one scenario: its runs file is of one; resume each scenario on its own")}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// A machine-readable output on stdout must not be mixed with text:
	// the text goes to stderr then.
	textOut := stdout
	if out.json == "-" || out.junit == "-" || out.html == "-" {
		textOut = stderr
	}
	worst := exitOK
	var reports []*report.Report
	var runsErr error
	for i, sc := range scs {
		name := files[i]
		if name == "" {
			name = sc.Name
		}
		opt := runner.Options{Tool: "rdmarun " + buildversion.String(), File: files[i], Progress: progress(stderr)}
		if out.resume != "" {
			var err error
			if opt.Resume, err = readResume(out.resume, sc, stderr); err != nil {
				return err
			}
		}
		var rf *runsFile
		if out.runs != "" {
			var err error
			path := scenarioPath(out.runs, sc.Name, len(scs) > 1)
			if out.resume != "" && sameFile(path, out.resume) {
				rf, err = appendRuns(path, stderr)
			} else {
				rf, err = createRuns(path, stderr)
			}
			if err != nil {
				return err
			}
			rf.resumed = opt.Resume
			rf.hook(&opt)
		}
		rep, err := executeOne(ctx, stderr, sc, name, at, opt)
		if rf != nil {
			if cerr := rf.close(); runsErr == nil {
				runsErr = cerr
			}
		}
		if err != nil {
			return err
		}
		reports = append(reports, rep)
		if !out.quiet || rep.Summary.Failed+rep.Summary.Errors > 0 {
			if err := out.text(report.TextOptions{Verbose: out.verbose}, textOut, rep); err != nil {
				return err
			}
		}
		worst = worse(worst, runner.ExitStatus(rep))
		if ctx.Err() != nil {
			break
		}
	}
	// Results gathered so far are written even after Ctrl-C.
	if err := out.write(stdout, reports); err != nil {
		return &exitError{exitEnvironment, err}
	}
	if err := out.save.write(stderr, reports, out.quiet); err != nil {
		return &exitError{exitEnvironment, err}
	}
	if runsErr != nil {
		return &exitError{exitEnvironment, runsErr}
	}
	if worst != exitOK {
		return &exitError{worst, fmt.Errorf("%s", map[int]string{exitFailed: "a threshold failed (in a fleet: or a pair did not finish, or a suspect is named)", exitAborted: "a run did not finish", exitEnvironment: "the environment is unusable"}[worst])}
	}
	return nil
}

// executeOne runs one scenario: a fleet through its hosts' serves, any
// other on its target.
func executeOne(ctx context.Context, stderr io.Writer, sc *runner.Scenario, name string, at *where, opt runner.Options) (*report.Report, error) {
	var rep *report.Report
	if sc.Fleet != nil {
		relay, err := at.relay(sc, name)
		if err != nil {
			return nil, err
		}
		if err := waitForResponders(ctx, stderr, sc, name, at.waitResponders); err != nil {
			return nil, err
		}
		if err := resolveDevices(ctx, stderr, sc, name, relay); err != nil {
			return nil, err
		}
		rep, err = runner.ExecuteFleet(ctx, sc, relay, opt)
		if err != nil {
			return nil, &exitError{exitInvalid, fmt.Errorf("%s: %w", name, err)}
		}
		return rep, nil
	}
	target, err := openTarget(at, sc)
	if err != nil {
		return nil, err
	}
	rep, err = runner.Execute(ctx, sc, target, opt)
	target.Close()
	var placed runner.ErrorList // names the file and the place already
	if errors.As(err, &placed) {
		return nil, &exitError{exitInvalid, err}
	}
	if err != nil {
		return nil, &exitError{exitInvalid, fmt.Errorf("%s: %w", name, err)}
	}
	return rep, nil
}

// waitForResponders is --wait-for-responders: a fleet started beside
// its responders (a Kubernetes Job, a batch step) waits for all of them
// rather than failing its first pairs as environment errors.
func waitForResponders(ctx context.Context, stderr io.Writer, sc *runner.Scenario, name string, within time.Duration) error {
	if within <= 0 {
		return nil
	}
	hosts := sc.Fleet.Hosts
	start := time.Now()
	err := runner.WaitForResponders(ctx, hosts, runner.ResponderWait{Within: within, Waiting: func(silent []string) {
		fmt.Fprintf(stderr, "waiting up to %v for %d of %d responders: %s\n", within, len(silent), len(hosts), strings.Join(silent, ", "))
	}})
	if err != nil {
		return &exitError{exitEnvironment, fmt.Errorf("%s: --wait-for-responders: %w", name, err)}
	}
	if d := time.Since(start); d >= time.Second {
		fmt.Fprintf(stderr, "all %d responders answered after %.1f s\n", len(hosts), d.Seconds())
	}
	return nil
}

// resolveDevices is a fleet's devices: auto: each host's responder is
// asked for its devices, which the log shows before the run plans its
// pairs over them.
func resolveDevices(ctx context.Context, stderr io.Writer, sc *runner.Scenario, name string, relay runner.Relay) error {
	fl := sc.Fleet
	if !fl.AutoDevices || len(fl.Rounds) > 0 {
		return nil
	}
	if err := runner.ResolveDevices(ctx, sc, relay); err != nil {
		return &exitError{exitEnvironment, fmt.Errorf("%s: %w", name, err)}
	}
	const listed = 16 // more hosts: one line that counts them
	if len(fl.Hosts) <= listed {
		for _, h := range fl.Hosts {
			fmt.Fprintf(stderr, "devices: auto: %s: %s\n", h.Name, strings.Join(h.Devices, ", "))
		}
	} else {
		fmt.Fprintf(stderr, "devices: auto: %d hosts, %s on %s\n", len(fl.Hosts), strings.Join(fl.Hosts[0].Devices, ", "), fl.Hosts[0].Name)
	}
	fmt.Fprintf(stderr, "devices: auto: %d pairs in %d rounds\n", len(fl.Pairs), len(fl.Rounds))
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
// scenario's name before its extension. "-" is stdout.
func (o *outputs) write(stdout io.Writer, reports []*report.Report) error {
	// A large fleet's HTML is several files (report.WriteHTML); on stdout
	// it is the main page alone.
	writeHTML := func(path string, rep *report.Report) error { _, err := report.WriteHTML(path, rep); return err }
	for _, out := range []struct {
		path  string
		write func(io.Writer, *report.Report) error
		file  func(string, *report.Report) error // writes the file(s) itself
	}{{o.json, report.JSON, nil}, {o.junit, report.JUnit, nil}, {o.html, report.HTML, writeHTML}} {
		if out.path == "" {
			continue
		}
		for _, rep := range reports {
			path := out.path
			if path != "-" {
				path = scenarioPath(path, rep.Scenario, len(reports) > 1)
			}
			if path != "-" && out.file != nil {
				if err := out.file(path, rep); err != nil {
					return err
				}
				continue
			}
			if err := writeOutput(stdout, path, func(w io.Writer) error { return out.write(w, rep) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// scenarioPath is the file of one scenario's output when many run: the
// scenario's name goes before the extension.
func scenarioPath(path, scenario string, many bool) string {
	if !many {
		return path
	}
	ext := ""
	if i := strings.LastIndex(path, "."); i > strings.LastIndex(path, "/") {
		path, ext = path[:i], path[i:]
	}
	return path + "-" + scenario + ext
}

// progress prints one line per run: on a terminal someone watches it
// rewrites the line (see liveLine), anywhere else it prints plain lines
// a log keeps.
func progress(w io.Writer) func(int, int, *report.Run) {
	tty := liveLine(w, os.Getenv)
	return func(done, total int, r *report.Run) {
		if r.Pair != nil {
			// A fleet's pairs run at once: a line each, terminal or not.
			fmt.Fprintf(w, "run %d/%d: %s -> %s%s: %s %s: %s (%.1f s)\n", done, total, r.Pair.A, r.Pair.B, attempt(r.Pair), r.Case, r.Label(), r.Status, r.Seconds)
			return
		}
		if r.Status == "" {
			if tty {
				fmt.Fprintf(w, "\r\033[K[%d/%d] %s %s ...", done+1, total, r.Case, r.Label())
			}
			return
		}
		if tty {
			fmt.Fprintf(w, "\r\033[K")
			return
		}
		fmt.Fprintf(w, "run %d/%d: %s %s: %s (%.1f s)\n", done, total, r.Case, r.Label(), r.Status, r.Seconds)
	}
}

func attempt(p *report.PairRun) string {
	if p.Attempt == 0 {
		return ""
	}
	return fmt.Sprintf(" (confirmation %d)", p.Attempt)
}

// writeOutput writes to stdout for "-", else to the file at path.
func writeOutput(stdout io.Writer, path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	return report.WriteFile(path, write)
}
