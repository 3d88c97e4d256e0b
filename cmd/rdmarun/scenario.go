package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/report"
)

// scenarioCmd runs (or only validates) YAML scenarios.
type scenarioCmd struct {
	files []string
	sets  []string
	// baseline is --baseline, which replaces the scenario's baseline:.
	baseline string
	where
	outputs
}

func newScenarioCmds(app *kingpin.Application) (run, validate *scenarioCmd) {
	run, validate = &scenarioCmd{outputs: outputs{text: report.TextOptions.Text}}, &scenarioCmd{}
	rc := app.Command("run", "Run YAML scenarios (the default: `rdmarun FILE...`).").Default()
	rc.Arg("file", "Scenario files.").Required().StringsVar(&run.files)
	run.addSets(rc)
	rc.Flag("device", "Override the scenario's device.").StringVar(&run.device)
	rc.Flag("port", "Override the scenario's port.").IntVar(&run.port)
	rc.Flag("gid-index", "Override the scenario's GID index (auto or a number).").StringVar(&run.gidIndex)
	rc.Flag("peer", "Override the scenario's peer: loopback or HOST[:PORT] of rdmarun serve.").StringVar(&run.peer)
	rc.Flag("peer-device", "Override the responder's device (loopback: the second device).").StringVar(&run.peerDevice)
	rc.Flag("wait-for-responders", "A fleet scenario: first wait up to this long (2m) until every host's responder accepts a connection, retrying each one that does not; past it, exit 4 naming the hosts that never answered. 0: start at once.").PlaceHolder("DURATION").DurationVar(&run.waitResponders)
	run.addTLSFlags(rc)
	run.addFlags(rc)
	rc.Flag("resume", "Resume an interrupted run from its --runs FILE: keep its passed and failed runs, run the rest (errored runs again; in a fleet every pair not wholly done), and report them all as one run. With --runs naming the same file, the new runs are added to it, so it can be resumed again. One scenario only.").PlaceHolder("FILE").StringVar(&run.resume)
	run.addBaselineFlags(rc, true)
	vc := app.Command("validate", "Check scenarios without running them.")
	vc.Arg("file", "Scenario files.").Required().StringsVar(&validate.files)
	validate.addSets(vc)
	validate.addBaselineFlags(vc, false)
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
	if err := c.checkBaselineFlags(); err != nil {
		return nil, err
	}
	var out []*runner.Scenario
	var errs []error
	for _, f := range c.files {
		if _, err := os.Stat(f); err != nil && !strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, ".yml") {
			errs = append(errs, fmt.Errorf("%q is neither a command nor a scenario file (see rdmarun --help)", f))
			continue
		}
		sc, err := runner.LoadWith(f, runner.LoadOptions{Vars: ov, Baseline: c.baseline})
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
		if f := sc.Fleet; f != nil && f.AutoDevices && len(f.Rounds) == 0 {
			fmt.Fprintf(w, "%s: scenario %s is valid: %s (%s), %s over devices: auto (asked of each host's responder when it runs, which plans the pairs); %s per pair\n",
				c.files[i], sc.Name, count(len(f.Hosts), "host"), f.Source, f.Pattern, count(n, "run"))
			continue
		}
		if f := sc.Fleet; f != nil {
			fmt.Fprintf(w, "%s: scenario %s is valid: %s (%s), %s: %s in %s; %s per pair, %d in all\n", c.files[i], sc.Name,
				count(len(f.Hosts), "host"), f.Source, f.Pattern, count(len(f.Pairs), "pair"),
				count(len(f.Rounds), "round"), count(n, "run"), n*len(f.Pairs))
			continue
		}
		against := ""
		if b := sc.Baseline; b != nil {
			against = fmt.Sprintf(", judged against %s (%s)", b.File, count(len(b.Report.Runs), "run"))
		}
		fmt.Fprintf(w, "%s: scenario %s is valid: %s%s\n", c.files[i], sc.Name, count(n, "run"), against)
	}
	return nil
}

// count says "1 run", "2 runs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// run executes every scenario and writes the outputs.
func (c *scenarioCmd) run(stdout, stderr io.Writer) error {
	scs, err := c.load()
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	return execute(stdout, stderr, scs, c.files, &c.where, &c.outputs)
}
