package version

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// testdata/*.buildinfo are debug.BuildInfo texts (dependencies left out)
// of real builds of cmd/rdmarun, except install-tag, written by hand as
// `go install ...@v1.2.3` records it: a module version and no VCS settings.
//
//	checkout-clean     go build in a clean clone (a .git directory)
//	checkout-dirty     the same with an uncommitted change
//	worktree-trimpath  make dist-packages in a git worktree: nothing recorded
func readBuildInfo(t testing.TB, name string) func() (*debug.BuildInfo, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".buildinfo"))
	if err != nil {
		t.Fatal(err)
	}
	bi, err := debug.ParseBuildInfo(string(b))
	if err != nil {
		t.Fatalf("testdata/%s.buildinfo: %v", name, err)
	}
	return func() (*debug.BuildInfo, bool) { return bi, true }
}

func TestResolve(t *testing.T) {
	const commit = "f92c60159199c835800bee76d23f0398d99a05b1"
	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }
	settings := func(kv ...string) func() (*debug.BuildInfo, bool) {
		bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return func() (*debug.BuildInfo, bool) { return bi, true }
	}
	for _, tc := range []struct {
		name                          string
		linkedVersion, linkedRevision string
		buildInfo                     func() (*debug.BuildInfo, bool)
		want                          Info
	}{
		{"clean checkout: the module version and commit the go command recorded", "", "",
			readBuildInfo(t, "checkout-clean"), Info{"v0.0.0-20261207140311-f92c60159199", commit}},
		{"dirty checkout: the commit marked as git describe marks it", "", "",
			readBuildInfo(t, "checkout-dirty"), Info{"v0.0.0-20261207140311-f92c60159199+dirty", commit + "-dirty"}},
		{"worktree build without linker flags records no commit", "", "",
			readBuildInfo(t, "worktree-trimpath"), Info{"devel", Unknown}},
		{"make build in a worktree: the linker flags say both", "9b229a5-dirty", "9b229a50bf4a44530677e3e07688120aaaa4cb84-dirty",
			readBuildInfo(t, "worktree-trimpath"), Info{"9b229a5-dirty", "9b229a50bf4a44530677e3e07688120aaaa4cb84-dirty"}},
		{"linker flags win over the recorded commit", "v1.2.3", "0123456789abcdef0123456789abcdef01234567",
			readBuildInfo(t, "checkout-dirty"), Info{"v1.2.3", "0123456789abcdef0123456789abcdef01234567"}},
		{"a linked version alone keeps the recorded commit", "v1.2.3", "",
			readBuildInfo(t, "checkout-clean"), Info{"v1.2.3", commit}},
		{"go install of a tag records the version, not the commit", "", "",
			readBuildInfo(t, "install-tag"), Info{"v1.2.3", Unknown}},
		{"vcs.modified absent is clean", "", "",
			settings("vcs", "git", "vcs.revision", "abc123"), Info{"devel", "abc123"}},
		{"vcs.modified before vcs.revision", "", "",
			settings("vcs.modified", "true", "vcs.revision", "abc123"), Info{"devel", "abc123-dirty"}},
		{"modified without a revision says nothing", "", "",
			settings("vcs.modified", "true"), Info{"devel", Unknown}},
		{"empty revision setting", "", "",
			settings("vcs.revision", ""), Info{"devel", Unknown}},
		{"no build info", "", "", noInfo, Info{"devel", Unknown}},
		{"no build info, linker flags", "v1", "abc", noInfo, Info{"v1", "abc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.linkedVersion, tc.linkedRevision, tc.buildInfo); got != tc.want {
				t.Errorf("resolve(%q, %q) = %+v, want %+v", tc.linkedVersion, tc.linkedRevision, got, tc.want)
			}
		})
	}
}

// FuzzResolve: for any build info the go command could hand back, both
// fields are set, linker flags win, and a recorded commit is reported.
func FuzzResolve(f *testing.F) {
	for _, name := range []string{"checkout-clean", "checkout-dirty", "worktree-trimpath", "install-tag"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".buildinfo"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), "", "")
		f.Add(string(b), "v1.2.3", "abc-dirty")
	}
	f.Fuzz(func(t *testing.T, text, linkedVersion, linkedRevision string) {
		bi, err := debug.ParseBuildInfo(text)
		if err != nil {
			return
		}
		got := resolve(linkedVersion, linkedRevision, func() (*debug.BuildInfo, bool) { return bi, true })
		if got.Version == "" || got.Revision == "" {
			t.Fatalf("empty field: %+v", got)
		}
		if linkedVersion != "" && got.Version != linkedVersion {
			t.Errorf("version %q, want the linked %q", got.Version, linkedVersion)
		}
		if linkedRevision != "" {
			if got.Revision != linkedRevision {
				t.Errorf("revision %q, want the linked %q", got.Revision, linkedRevision)
			}
			return
		}
		// The last setting of a key is the one that counts.
		recorded := ""
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				recorded = s.Value
			}
		}
		if recorded != "" && !strings.HasPrefix(got.Revision, recorded) {
			t.Errorf("revision %q does not start with the recorded commit %q", got.Revision, recorded)
		}
	})
}

// A test binary is built without linker flags; whatever the go command
// recorded, Get must return both fields, never an empty one.
func TestGetNotEmpty(t *testing.T) {
	if info := Get(); info.Version == "" || info.Revision == "" || String() != info.Version {
		t.Fatalf("Get() = %+v, String() = %q", info, String())
	}
}
