package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/runner/report"
)

// saveBaseline is --save-baseline: where the run's report goes as the
// next baseline, and whether a run that failed a condition may be it.
type saveBaseline struct {
	path  string
	set   bool
	force bool
}

// addBaselineFlags registers --baseline, and for a command that runs
// scenarios --save-baseline and --force-save-baseline.
func (c *scenarioCmd) addBaselineFlags(cmd *kingpin.CmdClause, runs bool) {
	cmd.Flag("baseline", "Judge the conditions that read a baseline (not regressed(p99), baseline.bw_gbps) against this report, in place of the scenario's baseline: (one scenario file).").
		PlaceHolder("FILE").StringVar(&c.baseline)
	if !runs {
		return
	}
	cmd.Flag("save-baseline", "Write the report, as --json does, here as the next baseline, when every run finished and passed (one scenario file). The file is replaced whole, so it may be the --baseline of this run.").
		PlaceHolder("FILE").IsSetByUser(&c.save.set).StringVar(&c.save.path)
	cmd.Flag("force-save-baseline", "Save the --save-baseline report even when a condition failed; never one of a run that did not finish or stopped early.").
		BoolVar(&c.save.force)
}

// checkBaselineFlags refuses what the baseline flags cannot mean: a
// baseline is one scenario's report.
func (c *scenarioCmd) checkBaselineFlags() error {
	switch {
	case c.save.set && (c.save.path == "" || c.save.path == "-"):
		return errors.New("--save-baseline: give a file; a baseline is read back with --baseline FILE or baseline: FILE")
	case len(c.files) > 1 && c.baseline != "":
		return fmt.Errorf("--baseline names one report, and %d scenario files are given; give one, or set baseline: in each", len(c.files))
	case len(c.files) > 1 && c.save.path != "":
		return fmt.Errorf("--save-baseline writes one report, and %d scenario files are given; give one", len(c.files))
	}
	return nil
}

// write saves the one scenario's report as the next baseline, or says on
// stderr why it does not: a baseline is what later runs must match, so
// it is a run that ran to its end, and one that passed unless forced.
// The exit code already tells each of those runs from a good one.
func (s saveBaseline) write(stderr io.Writer, reports []*report.Report, quiet bool) error {
	if s.path == "" || len(reports) != 1 {
		return nil
	}
	rep := reports[0]
	why := ""
	switch sum := rep.Summary; {
	case rep.StopReason != "":
		why = "the scenario stopped early (" + rep.Stopped + ")"
	case sum.Errors > 0:
		why = fmt.Sprintf("%s did not finish", count(sum.Errors, "run"))
	case sum.Failed > 0 && !s.force:
		why = fmt.Sprintf("%s failed a condition; a baseline should be a run you accept (add --force-save-baseline to save it anyway)", count(sum.Failed, "run"))
	}
	if why != "" {
		fmt.Fprintf(stderr, "rdmarun: --save-baseline %s: not saved: %s\n", s.path, why)
		return nil
	}
	if err := writeFileAtomic(s.path, func(w io.Writer) error { return report.JSON(w, rep) }); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "rdmarun: saved the baseline to %s (%s)\n", s.path, count(len(rep.Runs), "run"))
	}
	return nil
}

// writeFileAtomic writes a file beside path and renames it over path, so
// that a reader (the next run's --baseline) sees the old file or the new
// one whole, never a part, even when the write fails or is interrupted.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	// A report is no secret: readable as a file --json writes is.
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
