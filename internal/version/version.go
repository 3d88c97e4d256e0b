// Package version is the one place both binaries get their version and
// revision from, so that `rdmarun --version`, `rdmarun_exporter --version`
// and the exporter's build_info metric agree for a `make` build, a plain
// `go build` in a checkout and a `go install ...@vX`.
package version

import "runtime/debug"

// Version and Revision are set at link time by the Makefile:
//
//	-ldflags '-X github.com/rdmarun/rdmarun/internal/version.Version=v1.2.3
//	          -X github.com/rdmarun/rdmarun/internal/version.Revision=<commit>'
//
// Left empty, Get falls back to what the go command recorded. The Makefile
// sets both because the go command records the commit only when it builds
// in a repository's main checkout: not in a git worktree (its .git is a
// file, golang/go#58218), not with -buildvcs=false.
var (
	Version  string
	Revision string
)

// Unknown is the revision of a build that recorded none, as
// prometheus/common/version calls it.
const Unknown = "unknown"

// Info is a build's identity.
type Info struct {
	// Version is git describe's (from the Makefile), else the main
	// module's version, else "devel".
	Version string
	// Revision is the commit, with "-dirty" if the tree had uncommitted
	// changes, else Unknown.
	Revision string
}

// Get returns this binary's Info.
func Get() Info { return resolve(Version, Revision, debug.ReadBuildInfo) }

// String returns the version, Get().Version.
func String() string { return Get().Version }

func resolve(linkedVersion, linkedRevision string, buildInfo func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: linkedVersion, Revision: linkedRevision}
	bi, ok := buildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	if info.Version == "" {
		// "(devel)" is what go run and builds outside version control
		// record; it says nothing more than our own fallback does.
		info.Version = "devel"
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
	}
	if info.Revision == "" {
		info.Revision = vcsRevision(bi.Settings)
	}
	return info
}

// vcsRevision is the commit in the go command's build settings, marked
// "-dirty" as git describe --dirty marks a version, or Unknown. The go
// command counts untracked files as modifications too, so a build it
// stamps may say dirty where git describe does not.
func vcsRevision(settings []debug.BuildSetting) string {
	rev, modified := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return Unknown
	}
	if modified {
		return rev + "-dirty"
	}
	return rev
}
