package rdmatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Fault runs the testbed's testbed/fault.sh with args inside the VM (a
// path fault, a host down); the test's end clears every fault. The
// script is found from the package directory a test runs in, upwards.
func Fault(t testing.TB, args ...string) {
	t.Helper()
	script := faultScript(t)
	if out, err := exec.Command(script, args...).CombinedOutput(); err != nil {
		t.Fatalf("fault.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "clear").CombinedOutput(); err != nil {
			t.Errorf("fault.sh clear: %v\n%s", err, out)
		}
	})
}

func faultScript(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "testbed", "fault.sh")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no testbed/fault.sh above the test's directory")
		}
		dir = up
	}
}
