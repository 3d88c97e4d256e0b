package validate

// The dashboards are Grafana's classic JSON model, which the file
// provisioner and the dashboard sidecar load; the SDK's dashboard package is
// that model. Its suggested replacement, dashboardv2, is a different format.
//lint:file-ignore SA1019 dashboard.Dashboard is the format of our files

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func init() {
	// Panel options and queries decode into their plugins' types only
	// when the plugins are registered.
	plugins.RegisterDefaultPlugins()
}

// decodeDashboard decodes a dashboard into the SDK's type and runs its
// validation.
func decodeDashboard(raw []byte) (*dashboard.Dashboard, error) {
	var d dashboard.Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// strictFindings splits the SDK's strict decoding errors into unknown keys
// and the rest.
func strictFindings(raw []byte) (unknown, other []string) {
	var d dashboard.Dashboard
	err := d.UnmarshalJSONStrict(raw)
	if err == nil {
		return nil, nil
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.Contains(line, "unexpected field") {
			unknown = append(unknown, line)
		} else if line != "" {
			other = append(other, line)
		}
	}
	return unknown, other
}

// TestDashboardsDecodeAndValidate: every dashboards/*.json decodes into
// grafana-foundation-sdk's Dashboard and passes its Validate. The SDK's
// strict decoding also finds keys its types do not know (a misspelt key
// Grafana would ignore): those fail. It also names fields newer Grafana
// versions added and our files lack; Grafana fills in their defaults, so
// those are only logged.
func TestDashboardsDecodeAndValidate(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "dashboards")
	names := globBase(t, dir, "*.json")
	if len(names) == 0 {
		t.Fatal("no dashboards")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			raw := readFile(t, filepath.Join(dir, name))
			d, err := decodeDashboard(raw)
			if err != nil {
				t.Fatal(err)
			}
			if d.Title == nil || *d.Title == "" || d.Uid == nil || *d.Uid == "" {
				t.Error("no title or uid")
			}
			// Every panel of the file made it into the typed value.
			var plain struct {
				Panels []json.RawMessage `json:"panels"`
			}
			if err := json.Unmarshal(raw, &plain); err != nil {
				t.Fatal(err)
			}
			if len(plain.Panels) == 0 || len(d.Panels) != len(plain.Panels) {
				t.Errorf("%d panels decoded of %d", len(d.Panels), len(plain.Panels))
			}
			unknown, missing := strictFindings(raw)
			for _, f := range unknown {
				t.Error(f)
			}
			for _, f := range missing {
				t.Logf("advisory: %s", f)
			}
		})
	}
}

// TestDashboardValidationCanFail: type errors in a good dashboard are
// refused, so the test above is not vacuous.
func TestDashboardValidationCanFail(t *testing.T) {
	raw := string(readFile(t, filepath.Join(repoRoot(t), "dashboards", "rdma-fleet.json")))
	if _, err := decodeDashboard([]byte(raw)); err != nil {
		t.Fatalf("the unmodified dashboard must pass: %v", err)
	}
	for _, m := range []struct{ from, to string }{
		{`"h": 1,`, `"h": "1",`},
		{`"graphTooltip": 1,`, `"graphTooltip": "shared",`},
		{`"editable": true,`, `"editable": "yes",`},
	} {
		t.Run(m.to, func(t *testing.T) {
			if !strings.Contains(raw, m.from) {
				t.Fatalf("the dashboard has no %s to break", m.from)
			}
			if _, err := decodeDashboard([]byte(strings.Replace(raw, m.from, m.to, 1))); err == nil {
				t.Errorf("%s passed", m.to)
			}
		})
	}
	t.Run("misspelt key", func(t *testing.T) {
		unknown, _ := strictFindings([]byte(strings.Replace(raw, `"graphTooltip":`, `"graphToolTip":`, 1)))
		if len(unknown) != 1 || !strings.Contains(unknown[0], "graphToolTip") {
			t.Errorf("want one unexpected field graphToolTip, got %q", unknown)
		}
	})
}
