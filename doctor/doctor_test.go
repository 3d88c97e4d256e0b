package doctor

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rdmarun/rdmarun/internal/golden"
)

// fixtures are the saved hosts under testdata/, each with the names of
// the checks it must fail: no more, no fewer.
var fixtures = []struct {
	host   string
	failed []string
}{
	{"mlx5-roce", nil},
	{"bnxt-roce", nil},
	{"mlx5-ib", nil},
	{"rxe", nil},
	// PCIe x8 of x16, MTU 1500 on the netdev under an active MTU of 4096,
	// governor powersave, memlock 64 KiB.
	{"broken", []string{"cpu.governor", "limits.memlock", "mtu.netdev", "pcie.width"}},
}

func runFixture(t *testing.T, host string) Report {
	t.Helper()
	env, err := EnvAt(filepath.Join("testdata", host))
	if err != nil {
		t.Fatal(err)
	}
	return Run(env)
}

func TestFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.host, func(t *testing.T) {
			r := runFixture(t, f.host)
			var failed []string
			for _, c := range r.Checks {
				if c.Status == Fail {
					failed = append(failed, c.Name)
				}
			}
			slices.Sort(failed)
			if !slices.Equal(failed, f.failed) {
				t.Errorf("failed checks %q, want %q", failed, f.failed)
			}
			if r.Failed() != (len(f.failed) > 0) {
				t.Errorf("Failed() = %v with failed checks %q", r.Failed(), failed)
			}
			if len(r.Devices) != 1 {
				t.Errorf("devices %q, want the fixture's one", r.Devices)
			}
			var text, js bytes.Buffer
			if err := WriteText(&text, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, f.host+".golden.txt", text.Bytes())
			golden.Check(t, f.host+".golden.json", js.Bytes())
		})
	}
}
