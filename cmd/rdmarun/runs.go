package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/report"
)

// runsFile is --runs: each run's result, streamed as it finishes, so a
// crash or Ctrl-C of this process keeps every finished run.
//
// A write error does not stop the tests: an hour of a fleet's runs is
// worth more than the stream, and the --json, --junit and --html outputs
// at the end still hold every run. It is told once on stderr when it
// happens, no later line is written (a part-written line would sit in
// the middle of the file), and the exit code says it at the end.
type runsFile struct {
	path   string
	stderr io.Writer
	f      *os.File
	w      *report.RunsWriter
	err    error // the first error; set, nothing more is written
	// appending: the file is --resume's, its header already there.
	appending bool
	// resumed are the runs --resume keeps, written after the header of
	// a new file.
	resumed []report.Run
}

// createRuns creates the runs file at path before the scenario runs, so
// a path that cannot be written fails before the tests, not after them.
func createRuns(path string, stderr io.Writer) (*runsFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, &exitError{exitEnvironment, fmt.Errorf("--runs: %w", err)}
	}
	return &runsFile{path: path, stderr: stderr, f: f}, nil
}

// hook sets opt's Begun and wraps its Progress to write the file.
func (rf *runsFile) hook(opt *runner.Options) {
	opt.Begun = func(rep *report.Report) {
		if rf.appending {
			rf.w = report.AppendRunsWriter(rf.f)
			return
		}
		w, err := report.NewRunsWriter(rf.f, rep)
		rf.w = w
		rf.fail(err)
		rf.kept(rf.resumed)
	}
	next := opt.Progress
	opt.Progress = func(done, total int, run *report.Run) {
		// A run without a status has not run yet: the before-call.
		if run.Status != "" && rf.err == nil && rf.w != nil {
			rf.fail(rf.w.Write(run))
		}
		if next != nil {
			next(done, total, run)
		}
	}
}

func (rf *runsFile) fail(err error) {
	if err == nil || rf.err != nil {
		return
	}
	rf.err = err
	fmt.Fprintf(rf.stderr, "rdmarun: --runs %s: %v: later runs are not streamed; the tests go on\n", rf.path, err)
}

// close syncs the file: every line reached the kernel as its run ended,
// which a crash of this process keeps; one fsync at the end covers a
// machine that loses power after a run that finished. It returns the
// first error of the file's life.
func (rf *runsFile) close() error {
	if rf.w == nil && rf.err == nil && !rf.appending {
		// The scenario did not start (Execute refused it): an empty
		// file would only be a runs file without a header.
		rf.f.Close()
		return os.Remove(rf.path)
	}
	if rf.err == nil {
		rf.err = rf.f.Sync()
	}
	if err := rf.f.Close(); rf.err == nil {
		rf.err = err
	}
	if rf.err != nil {
		return fmt.Errorf("--runs %s: %w: the file misses runs; the other outputs hold them all", rf.path, rf.err)
	}
	return nil
}

var errRunsStdout = errors.New("--runs needs a file name: - (stdout) would mix the stream with the report's text; name a file, or /dev/stdout with the text sent elsewhere")
