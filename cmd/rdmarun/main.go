// Command rdmarun runs RDMA tests from YAML scenarios (run, validate) or
// flags (bench): on one node through a loopback pair, against a remote
// responder, or across a fleet's pairs of hosts. It is that responder too
// (serve), and compares reports (compare), checks a host (doctor), lists
// devices and makes the token a fleet shares.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kingpin/v2"

	buildversion "github.com/rdmarun/rdmarun/internal/version"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// exitError carries an exit code up to run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// versionLine is what --version and the version command print: the
// version and revision the exporter's build_info metric carries too.
func versionLine() string {
	b := buildversion.Get()
	return fmt.Sprintf("rdmarun %s (revision: %s)", b.Version, b.Revision)
}

func run(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("rdmarun", "Scriptable RDMA test runner.")
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	// kingpin would call os.Exit after --help; run must return instead.
	helped := false
	app.Terminate(func(int) { helped = true })
	app.HelpFlag.Short('h')
	app.Version(versionLine())

	devCmd := app.Command("devices", "List RDMA devices, ports and GID tables.")
	devJSON := devCmd.Flag("json", "Print JSON instead of a table.").Bool()

	lb := newBenchCmd(app)
	srv := newServeCmd(app)
	scRun, scValidate := newScenarioCmds(app)
	tok := newTokenCmd(app)
	doc := newDoctorCmd(app)
	cmpCmd := newCompareCmd(app)

	app.Command("version", "Print the version.")

	cmd, err := app.Parse(args)
	if helped {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmarun: %v (see rdmarun --help)\n", err)
		return exitInvalid
	}
	switch cmd {
	case "devices":
		err = runDevices(stdout, *devJSON)
	case "bench":
		err = lb.run(stdout, stderr)
	case "serve":
		err = srv.run(stderr)
	case "run":
		err = scRun.run(stdout, stderr)
	case "validate":
		err = scValidate.validate(stdout)
	case "token":
		err = tok.run(stdout)
	case "doctor":
		err = doc.run(stdout)
	case "compare":
		err = cmpCmd.run(stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionLine())
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "rdmarun: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitAborted
}
