// Package doctortest gives other packages' tests a saved host for the
// doctor (doctor/testdata) that reads the same wherever the checkout is.
package doctortest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmarun/rdmarun/doctor"
)

// SavedHost is doctor.EnvAt(root) with the saved /dev copied to a
// temporary directory. device.uverbs opens the device node for reading
// and writing, and a checkout may be read-only (the testbed VM mounts
// it so), where every saved node would read as not writable.
func SavedHost(t testing.TB, root string) doctor.Env {
	t.Helper()
	env, err := doctor.EnvAt(root)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dev")
	err = filepath.WalkDir(env.Dev, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(env.Dev, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("copying the saved host's /dev: %v", err)
	}
	env.Dev = dst
	return env
}
