package version

import (
	"runtime/debug"
	"testing"
)

func TestResolveOrder(t *testing.T) {
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Main: debug.Module{Version: v}}, true }
	}
	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name, linked string
		buildInfo    func() (*debug.BuildInfo, bool)
		want         string
	}{
		{"linker flag wins over build info", "v1.2.3-4-gabcdef0", info("v1.2.0"), "v1.2.3-4-gabcdef0"},
		{"go install records the module version", "", info("v1.2.0"), "v1.2.0"},
		{"go build in a checkout records a pseudo-version", "", info("v0.0.0-20261201031500-abcdef012345+dirty"), "v0.0.0-20261201031500-abcdef012345+dirty"},
		{"(devel) is no version", "", info("(devel)"), "devel"},
		{"empty module version", "", info(""), "devel"},
		{"no build info", "", noInfo, "devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.linked, tc.buildInfo); got != tc.want {
				t.Errorf("resolve(%q) = %q, want %q", tc.linked, got, tc.want)
			}
		})
	}
}

// A test binary is built without the linker flag; whatever the go command
// recorded, String must return something, never an empty version.
func TestStringNotEmpty(t *testing.T) {
	if String() == "" {
		t.Fatal("empty version")
	}
}
