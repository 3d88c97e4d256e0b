package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/runner/compare"
)

// compareCmd is `rdmarun compare BASE.json NEW.json`.
type compareCmd struct {
	base, next            string
	minEffect, confidence string
	resamples             int
	seed                  uint64
	// out holds --json, --junit and --html, as a scenario's outputs do.
	out outputs
}

func newCompareCmd(app *kingpin.Application) *compareCmd {
	c := &compareCmd{}
	d := compare.DefaultOptions()
	cmd := app.Command("compare", "Compare two reports (--json of a scenario, bench or fleet run): per test, each metric's change with a confidence interval, and whether NEW regressed. Exit 0, 1 on a regression, 3 on tests that do not match.")
	cmd.Arg("base", "The baseline report (JSON).").Required().StringVar(&c.base)
	cmd.Arg("new", "The report to judge (JSON).").Required().StringVar(&c.next)
	cmd.Flag("min-effect", "The smallest change that matters; a change inside it is never a regression (5% or 0.05).").Default(pct(d.MinEffect)).StringVar(&c.minEffect)
	cmd.Flag("confidence", "Confidence of each interval (95% or 0.95).").Default(pct(d.Confidence)).StringVar(&c.confidence)
	cmd.Flag("resamples", "Bootstrap resamples per metric.").Default(strconv.Itoa(d.Resamples)).IntVar(&c.resamples)
	cmd.Flag("seed", "Seed of the resampling: the same inputs and seed give the same verdicts.").Default(strconv.FormatUint(d.Seed, 10)).Uint64Var(&c.seed)
	cmd.Flag("json", "Write the comparison as JSON here (- for stdout; the text then goes to stderr).").IsSetByUser(&c.out.set[0]).StringVar(&c.out.json)
	cmd.Flag("junit", "Write JUnit XML here: a testcase per test, failed when it regressed (- for stdout).").IsSetByUser(&c.out.set[1]).StringVar(&c.out.junit)
	cmd.Flag("html", "Write a self-contained HTML page here: base and new side by side, each interval drawn (- for stdout).").IsSetByUser(&c.out.set[2]).StringVar(&c.out.html)
	return c
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', -1, 64) + "%" }

// fraction reads 5% or 0.05.
func fraction(flag, s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = p, 100
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: want a percentage (5%%) or a fraction (0.05)", flag, s)
	}
	return f / scale, nil
}

func (c *compareCmd) run(stdout, stderr io.Writer) error {
	o := compare.Options{Resamples: c.resamples, Seed: c.seed}
	var err error
	if o.MinEffect, err = fraction("min-effect", c.minEffect); err != nil {
		return &exitError{exitInvalid, err}
	}
	if o.Confidence, err = fraction("confidence", c.confidence); err != nil {
		return &exitError{exitInvalid, err}
	}
	if err := o.Validate(); err != nil {
		return &exitError{exitInvalid, err}
	}
	base, err := compare.Read(c.base)
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	next, err := compare.Read(c.next)
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	cmp, err := compare.Reports(base, next, c.base, c.next, o)
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	textOut := stdout
	for i, o := range []struct {
		path  *string
		write func(io.Writer, *compare.Comparison) error
	}{{&c.out.json, compare.JSON}, {&c.out.junit, compare.JUnit}, {&c.out.html, compare.HTML}} {
		if !c.out.set[i] {
			continue
		}
		if *o.path == "" {
			*o.path = "-" // kingpin hands a lone "-" over as ""
		}
		if *o.path == "-" {
			textOut = stderr
		}
		if err := writeOutput(stdout, *o.path, func(w io.Writer) error { return o.write(w, cmp) }); err != nil {
			return &exitError{exitEnvironment, err}
		}
	}
	if err := compare.Text(textOut, cmp); err != nil {
		return &exitError{exitEnvironment, err}
	}
	s := cmp.Summary
	switch {
	case s.Unmatched > 0 || s.Incomparable > 0:
		return &exitError{exitInvalid, fmt.Errorf("%d tests are in one report only and %d ran on different devices (listed above); compare reports of the same scenario on the same devices", s.Unmatched, s.Incomparable)}
	case s.Regressed > 0:
		return &exitError{exitFailed, fmt.Errorf("%d of %d tests regressed", s.Regressed, s.Compared)}
	}
	return nil
}
