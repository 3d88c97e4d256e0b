package main

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts in testdata/script run "rdmarun" as a command:
// the test binary, started under that name, runs main's run and exits.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rdmarun": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScript runs the CLI scripts. They must pass on machines with and
// without RDMA devices, so none of them reaches a device: every command
// they run ends (or fails) before rdmarun looks for one.
//
// go test -update rewrites the files that a failing cmp compares against,
// as it does for the golden files of TestRun.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"exitcode": cmdExitcode, "mode": cmdMode},
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       updateFlag(),
	})
}

// updateFlag reports whether the test binary runs with -update (the flag
// belongs to internal/golden).
func updateFlag() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	on, _ := strconv.ParseBool(f.Value.String())
	return on
}

// cmdExitcode implements "exitcode N program [args...]": it runs the
// program as exec does, leaving its output for stdout and stderr to check,
// and fails unless the program exits with exactly N. "! exec" would accept
// any failure, including 2 from a Go panic, which rdmarun never means.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("exitcode cannot be negated; name the expected code")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || want < 0 || want > 255 {
		ts.Fatalf("exitcode: %q is not an exit code", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %s: %v", args[1], err)
		}
		got = ee.ExitCode() // -1 when killed by a signal
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdMode implements "mode PERM FILE": the file's permission bits must be
// exactly PERM (octal), as a secret's must.
func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mode PERM FILE")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	if err != nil {
		ts.Fatalf("mode: %q is not an octal mode", args[0])
	}
	fi, err := os.Stat(ts.MkAbs(args[1]))
	if err != nil {
		ts.Fatalf("mode: %v", err)
	}
	if got := fi.Mode().Perm(); uint64(got) != want {
		ts.Fatalf("%s has mode %#o, want %#o", args[1], got, want)
	}
}
