package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/report"
)

// readResume reads --resume's runs file for sc. A last line cut by a
// crash loses that run alone, which runs again; any other fault, or a
// file of another scenario, is an invalid flag (exit 3).
func readResume(path string, sc *runner.Scenario, stderr io.Writer) ([]report.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &exitError{exitInvalid, fmt.Errorf("--resume: %w", err)}
	}
	defer f.Close()
	h, runs, err := report.ReadRuns(f)
	switch {
	case errors.Is(err, report.ErrTruncated):
		fmt.Fprintf(stderr, "rdmarun: --resume %s: %v; that run runs again\n", path, err)
	case err != nil:
		return nil, &exitError{exitInvalid, fmt.Errorf("--resume %s:%w", path, err)}
	}
	if h.Scenario != sc.Name {
		return nil, &exitError{exitInvalid, fmt.Errorf("--resume %s:1: the runs are of scenario %q, not %q: name the runs file of an interrupted run of this scenario", path, h.Scenario, sc.Name)}
	}
	return runs, nil
}

// sameFile reports whether --runs names the --resume file, however
// spelt; a --runs file not there yet is another.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// appendRuns opens the --resume file to add the runs still to run, so
// that it holds every run done and can be resumed again. Its header
// stays; a last line cut by a crash is cut off first, or the next line
// would be glued to it.
func appendRuns(path string, stderr io.Writer) (*runsFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, &exitError{exitEnvironment, fmt.Errorf("--runs: %w", err)}
	}
	b, err := io.ReadAll(f)
	if err == nil {
		keep := int64(bytes.LastIndexByte(b, '\n') + 1)
		if err = f.Truncate(keep); err == nil {
			_, err = f.Seek(keep, io.SeekStart)
		}
	}
	if err != nil {
		f.Close()
		return nil, &exitError{exitEnvironment, fmt.Errorf("--runs %s: %w", path, err)}
	}
	return &runsFile{path: path, stderr: stderr, f: f, appending: true}, nil
}

// kept writes the resumed runs a new runs file keeps, first, so that it
// too holds every run done.
func (rf *runsFile) kept(runs []report.Run) {
	for i := range runs {
		if runs[i].Status == report.Passed || runs[i].Status == report.Failed {
			if rf.err == nil && rf.w != nil {
				rf.fail(rf.w.Write(&runs[i]))
			}
		}
	}
}
