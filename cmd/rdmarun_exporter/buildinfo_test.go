package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	buildversion "github.com/rdmarun/rdmarun/internal/version"
)

// TestBuildInfoCarriesRevision: build_info's version and revision are
// internal/version's, which rdmarun --version prints too. The values are
// set as the Makefile's linker flags set them; a test binary has none.
func TestBuildInfoCarriesRevision(t *testing.T) {
	for _, tc := range []struct {
		name   string
		linked buildversion.Info
	}{
		{"linked", buildversion.Info{Version: "v9.8.7-3-gabcdef0-dirty", Revision: "abcdef0123456789abcdef0123456789abcdef01-dirty"}},
		// Whatever the go command recorded, both say it.
		{"nothing linked", buildversion.Info{}},
	} {
		linked := tc.linked
		t.Run(tc.name, func(t *testing.T) {
			oldVersion, oldRevision := buildversion.Version, buildversion.Revision
			buildversion.Version, buildversion.Revision = linked.Version, linked.Revision
			t.Cleanup(func() { buildversion.Version, buildversion.Revision = oldVersion, oldRevision })
			want := buildversion.Get()
			if want.Revision == "" || want.Version == "" {
				t.Fatalf("internal/version gives %+v", want)
			}
			if linked.Revision != "" && want.Revision != linked.Revision {
				t.Fatalf("internal/version gives revision %q, linked %q", want.Revision, linked.Revision)
			}

			cfg := filepath.Join(t.TempDir(), "rdmarun_exporter.yml")
			if err := os.WriteFile(cfg, []byte("responder: {enabled: false}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			d := startDaemonConfig(t, cfg)
			url := "http://" + d.addr + "/metrics"
			d.waitReady(t, http.DefaultClient, url)
			code, body := get(t, url)
			if code != http.StatusOK {
				t.Fatalf("/metrics: %d", code)
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			fam := fams["rdmarun_exporter_build_info"]
			if fam == nil || len(fam.GetMetric()) != 1 {
				t.Fatalf("want one rdmarun_exporter_build_info series, have %v", fam)
			}
			labels := map[string]string{}
			for _, l := range fam.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["revision"] != want.Revision || labels["version"] != want.Version {
				t.Errorf("build_info has version %q, revision %q; internal/version says %q, %q",
					labels["version"], labels["revision"], want.Version, want.Revision)
			}
		})
	}
}
