// Package version is the one place both binaries get their version from, so
// that `rdmarun --version` and `rdmarun_exporter --version` agree for a
// `make` build and for a `go install ...@vX`.
package version

import "runtime/debug"

// Version is set at link time by the Makefile:
//
//	-ldflags '-X github.com/rdmarun/rdmarun/internal/version.Version=v1.2.3'
//
// Left empty, String falls back to what the go command recorded.
var Version string

// String returns the version: the linked-in one, else the main module's
// version from the build info (what `go install module@vX` records), else
// "devel".
func String() string { return resolve(Version, debug.ReadBuildInfo) }

func resolve(linked string, buildInfo func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	// "(devel)" is what go run and builds outside version control record;
	// it says nothing more than our own fallback does.
	if bi, ok := buildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
