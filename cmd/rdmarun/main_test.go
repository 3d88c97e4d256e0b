package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/golden"
	buildversion "github.com/rdmarun/rdmarun/internal/version"
	"github.com/rdmarun/rdmarun/rdma"
)

func withDevices(t *testing.T, f func() ([]rdma.Device, error)) {
	old := listDevices
	listDevices = f
	t.Cleanup(func() { listDevices = old })
}

func fixtureDevices() ([]rdma.Device, error) {
	return rdma.ReadSysfsDevices("../../rdma/testdata/sysfs")
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		devices    func() ([]rdma.Device, error)
		code       int
		stdoutFile string // golden file for stdout
		stderr     string // substring of stderr
	}{
		{name: "devices table", args: []string{"devices"}, devices: fixtureDevices, code: exitOK, stdoutFile: "devices.txt"},
		{name: "devices json", args: []string{"devices", "--json"}, devices: fixtureDevices, code: exitOK, stdoutFile: "devices.json"},
		{name: "no device", args: []string{"devices"}, devices: func() ([]rdma.Device, error) { return nil, nil },
			code: exitEnvironment, stderr: "rdmarun: no RDMA device found.\nCheck, in this order:"},
		{name: "no libibverbs", args: []string{"devices"}, devices: func() ([]rdma.Device, error) { return nil, rdma.ErrNotSupported },
			code: exitEnvironment, stderr: "rdmarun: rdma: built without libibverbs"},
		{name: "sysfs error", args: []string{"devices"}, devices: func() ([]rdma.Device, error) { return nil, errors.New("boom") },
			code: exitEnvironment, stderr: "rdmarun: boom"},
		{name: "loopback with no device", args: []string{"loopback"}, devices: func() ([]rdma.Device, error) { return nil, nil },
			code: exitEnvironment, stderr: "no RDMA device found"},
		// The responder answers on the first device with an ACTIVE port
		// when --device names none; its flags are checked before any
		// device is looked for.
		{name: "serve with no device", args: []string{"serve", "--listen", "127.0.0.1:0", "--no-cm"}, devices: func() ([]rdma.Device, error) { return nil, nil },
			code: exitEnvironment, stderr: "rdmarun: no RDMA device found.\nCheck, in this order:"},
		{name: "serve with no ACTIVE port", args: []string{"serve", "--listen", "127.0.0.1:0", "--no-cm", "--port", "2"}, devices: fixtureDevices,
			code: exitEnvironment, stderr: "rdmarun: --device: none named, and no device has an ACTIVE port 2 (see rdmarun devices)\n"},
		{name: "serve negative max-sessions", args: []string{"serve", "--listen", "127.0.0.1:0", "--max-sessions=-1"},
			code: exitInvalid, stderr: "rdmarun: --max-sessions -1: want 0 (keep none) or more\n"},
		{name: "serve zero session-idle", args: []string{"serve", "--listen", "127.0.0.1:0", "--max-sessions=0", "--session-idle=0s"},
			code: exitInvalid, stderr: "rdmarun: --session-idle 0s: want a positive duration such as 5m\n"},
		{name: "serve cm-port out of range", args: []string{"serve", "--listen", "127.0.0.1:0", "--cm-port=65536"},
			code: exitInvalid, stderr: "rdmarun: --cm-port 65536: want a port from 0 to 65535\n"},
		{name: "loopback bad size", args: []string{"loopback", "--sizes", "2,4kb"},
			code: exitInvalid, stderr: `rdmarun: --sizes: "4kb" is not a size`},
		{name: "loopback zero size", args: []string{"loopback", "--sizes", "0"},
			code: exitInvalid, stderr: `rdmarun: --sizes: "0" is not a size a message can have`},
		{name: "loopback bad gid", args: []string{"loopback", "--gid-index", "x"},
			code: exitInvalid, stderr: `rdmarun: --gid-index "x": want auto or an index`},
		{name: "loopback bad mtu", args: []string{"loopback", "--mtu", "1500"},
			code: exitInvalid, stderr: `rdmarun: --mtu: "1500" is not a path MTU; write 256, 512, 1024, 2048 or 4096`},
		{name: "loopback bad op", args: []string{"loopback", "--op", "teleport"},
			code: exitInvalid, stderr: `rdmarun: --op: "teleport" is not an op; write send, send_imm, write, write_imm, read, fetch_add or cmp_swap`},
		{name: "loopback impossible combination", args: []string{"loopback", "--op", "read", "--qp-type", "uc"},
			code: exitInvalid, stderr: "rdmarun: op read needs a response from the target, and UC has none; use qp_type rc"},
		{name: "loopback write latency in event mode", args: []string{"loopback", "--op", "write", "--mode", "event"},
			code: exitInvalid, stderr: "use op write_imm for event mode"},
		{name: "loopback atomic size", args: []string{"loopback", "--op", "fetch_add", "--sizes", "16"},
			code: exitInvalid, stderr: "size must be 8, not 16"},
		{name: "loopback bad cpus", args: []string{"loopback", "--cpus", "0,x"},
			code: exitInvalid, stderr: `rdmarun: --cpus: "x" is not a whole number`},
		{name: "loopback bad measure", args: []string{"loopback", "--measure", "speed"},
			code: exitInvalid, stderr: `rdmarun: --measure: "speed" is not a measure; write latency, bandwidth, or both`},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitInvalid, stderr: `rdmarun: "frobnicate" is neither a command nor a scenario file (see rdmarun --help)`},
		{name: "missing scenario", args: []string{"nope.yaml"}, code: exitInvalid, stderr: "nope.yaml"},
		{name: "invalid scenario", args: []string{"../../runner/testdata/invalid-unknown-key.yaml"}, code: exitInvalid, stderr: `unknown key "peeer"; did you mean "peer"?`},
		{name: "validate", args: []string{"validate", "../../scenarios/quickstart.yaml"}, code: exitOK},
		{name: "bad set", args: []string{"validate", "--set", "x", "../../scenarios/quickstart.yaml"}, code: exitInvalid, stderr: `--set "x": want NAME=VALUE`},
		{name: "help", args: []string{"--help"}, code: exitOK},
		{name: "version", args: []string{"version"}, code: exitOK},
		{name: "version flag", args: []string{"--version"}, code: exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.devices != nil {
				withDevices(t, tc.devices)
			} else {
				withDevices(t, func() ([]rdma.Device, error) { t.Fatal("devices listed"); return nil, nil })
			}
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if tc.stdoutFile != "" {
				golden.Check(t, tc.stdoutFile, stdout.Bytes())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.stderr)
			}
		})
	}
}

// TestVersionPrintsRevision: --version and the version command print the
// version and revision of internal/version, the exporter's build_info's
// too, as the Makefile's linker flags set them.
func TestVersionPrintsRevision(t *testing.T) {
	oldVersion, oldRevision := buildversion.Version, buildversion.Revision
	buildversion.Version, buildversion.Revision = "v9.8.7-3-gabcdef0-dirty", "abcdef0123456789abcdef0123456789abcdef01-dirty"
	t.Cleanup(func() { buildversion.Version, buildversion.Revision = oldVersion, oldRevision })
	const want = "rdmarun v9.8.7-3-gabcdef0-dirty (revision: abcdef0123456789abcdef0123456789abcdef01-dirty)\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitOK || stdout.String() != want {
			t.Errorf("rdmarun %s: exit %d, stdout %q, want %q; stderr %q", args[0], code, stdout.String(), want, stderr.String())
		}
	}
}
