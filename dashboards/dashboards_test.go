package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/promtooltest"
)

func load(t *testing.T) []Dashboard {
	t.Helper()
	ds, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func queries(t *testing.T) []Query {
	t.Helper()
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func TestFiles(t *testing.T) {
	want := []string{"rdma-fleet.json", "rdma-mesh.json", "rdma-ports.json", "rdma-target.json"}
	if got := Files(); !slices.Equal(got, want) {
		t.Errorf("Files() = %v, want %v", got, want)
	}
}

// TestUIDs: links, bookmarks and provisioning updates find a dashboard by
// uid, so it is fixed to the file's name and never changes.
func TestUIDs(t *testing.T) {
	seen := map[string]bool{}
	valid := regexp.MustCompile(`^[a-z0-9-]{1,40}$`)
	for _, d := range load(t) {
		if want := strings.TrimSuffix(d.File, ".json"); d.UID != want {
			t.Errorf("%s: uid %q, want %q (the file name)", d.File, d.UID, want)
		}
		if !valid.MatchString(d.UID) {
			t.Errorf("%s: uid %q is not 1-40 of [a-z0-9-]", d.File, d.UID)
		}
		if seen[d.UID] {
			t.Errorf("%s: uid %q is used twice", d.File, d.UID)
		}
		seen[d.UID] = true
		if d.Title == "" {
			t.Errorf("%s: no title", d.File)
		}
		if id, ok := d.Raw["id"]; ok && id != nil {
			t.Errorf("%s: id %v; a fixed id clashes with the target Grafana's own", d.File, id)
		}
	}
}

// TestProvisionable: the files are what provisioning and import take
// as they are, not an export that asks for inputs.
func TestProvisionable(t *testing.T) {
	for _, d := range load(t) {
		if _, ok := d.Raw["__inputs"]; ok {
			t.Errorf("%s has __inputs: provisioning cannot fill them", d.File)
		}
		b, _ := Read(d.File)
		if strings.Contains(string(b), "${DS_") {
			t.Errorf("%s refers to an export-time ${DS_...} input", d.File)
		}
		if d.SchemaVersion != 39 {
			t.Errorf("%s: schemaVersion %d, want 39", d.File, d.SchemaVersion)
		}
	}
}

func isTemplated(ds *Datasource) bool {
	return ds != nil && ds.Type == "prometheus" && ds.UID == "${datasource}"
}

// TestDatasource: one datasource variable, and every panel, target,
// variable and annotation query uses it, so choosing a Prometheus at the
// top switches the whole dashboard.
func TestDatasource(t *testing.T) {
	for _, d := range load(t) {
		var dsVars []Variable
		for _, v := range d.Templating.List {
			if v.Type == "datasource" {
				dsVars = append(dsVars, v)
			}
			if v.Type == "query" && !isTemplated(v.Datasource) {
				t.Errorf("%s: variable %s has datasource %+v", d.File, v.Name, v.Datasource)
			}
		}
		if len(dsVars) != 1 || dsVars[0].Name != "datasource" || dsVars[0].QueryString() != "prometheus" {
			t.Errorf("%s: datasource variables %+v, want one named datasource of type prometheus", d.File, dsVars)
		}
		if d.Templating.List[0].Type != "datasource" {
			t.Errorf("%s: the datasource variable is not the first; the others depend on it", d.File)
		}
		for _, a := range d.Annotations.List {
			if !isTemplated(a.Datasource) {
				t.Errorf("%s: annotation %s has datasource %+v", d.File, a.Name, a.Datasource)
			}
		}
		for _, p := range d.AllPanels() {
			if p.Type == "row" {
				if p.Datasource != nil && !isTemplated(p.Datasource) {
					t.Errorf("%s: row %q has datasource %+v", d.File, p.Title, p.Datasource)
				}
				continue
			}
			if !isTemplated(p.Datasource) {
				t.Errorf("%s: panel %q has datasource %+v", d.File, p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", d.File, p.Title)
			}
			for _, tg := range p.Targets {
				if !isTemplated(tg.Datasource) {
					t.Errorf("%s: panel %q query %s has datasource %+v", d.File, p.Title, tg.RefID, tg.Datasource)
				}
			}
		}
	}
}

func TestPanels(t *testing.T) {
	for _, d := range load(t) {
		ids := map[int]bool{}
		titles := map[string]bool{}
		var raw struct {
			Panels []struct {
				GridPos struct{ H, W, X, Y int } `json:"gridPos"`
			} `json:"panels"`
		}
		b, _ := Read(d.File)
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		for _, p := range raw.Panels {
			if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("%s: gridPos %+v is off the 24-column grid", d.File, g)
			}
		}
		for _, p := range d.AllPanels() {
			if ids[p.ID] || p.ID <= 0 {
				t.Errorf("%s: panel %q has id %d, duplicated or unset", d.File, p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" {
				if titles[p.Title] {
					t.Errorf("%s: two panels are titled %q", d.File, p.Title)
				}
				titles[p.Title] = true
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("%s: panel %q: refId %q empty or repeated", d.File, p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: panel %q query %s is empty", d.File, p.Title, tg.RefID)
				}
			}
		}
	}
}

// TestUnits: a number without a unit is a guess for whoever reads it.
func TestUnits(t *testing.T) {
	for _, d := range load(t) {
		for _, p := range d.AllPanels() {
			var unit string
			switch p.Type {
			case "row", "table":
				continue // tables set units per column
			case "heatmap":
				var o struct {
					YAxis struct{ Unit string } `json:"yAxis"`
				}
				_ = json.Unmarshal(p.Options, &o)
				unit = o.YAxis.Unit
			default:
				var fc struct {
					Defaults struct{ Unit string } `json:"defaults"`
				}
				_ = json.Unmarshal(p.FieldConfig, &fc)
				unit = fc.Defaults.Unit
			}
			if unit == "" {
				t.Errorf("%s: panel %q (%s) has no unit", d.File, p.Title, p.Type)
			}
		}
	}
}

// TestRateWindows: dashboards let Grafana size rate windows
// ($__rate_interval, or $__range for a total over the time range); a
// fixed [5m] breaks at other scrape intervals or zoom levels. Fixed
// windows belong in recording rules.
func TestRateWindows(t *testing.T) {
	fixed := regexp.MustCompile(`\[[0-9]+[a-z]+\]`)
	for _, q := range queries(t) {
		if m := fixed.FindString(q.Expr); m != "" {
			t.Errorf("%s %q %s: fixed range %s; use $__rate_interval or a recording rule", q.Dashboard, q.Panel, q.RefID, m)
		}
		if strings.Contains(q.Expr, "rate(") && !strings.Contains(q.Expr, "$__rate_interval") && !strings.Contains(q.Expr, "$__range") {
			t.Errorf("%s %q %s: rate() without $__rate_interval: %s", q.Dashboard, q.Panel, q.RefID, q.Expr)
		}
	}
}

// vars are one value for each dashboard variable, as Grafana would
// substitute them.
func vars(d Dashboard) map[string]string {
	out := map[string]string{}
	for _, v := range d.Templating.List {
		switch {
		case v.Type == "datasource":
			out[v.Name] = "prometheus"
		case v.Multi || v.IncludeAll:
			out[v.Name] = ".*"
		default:
			out[v.Name] = "node-b"
		}
	}
	return out
}

func expandedQueries(t *testing.T) map[string][]Query {
	t.Helper()
	byUID := map[string]map[string]string{}
	for _, d := range load(t) {
		byUID[d.UID] = vars(d)
	}
	out := map[string][]Query{}
	for _, q := range queries(t) {
		e, ok := q.PromQL()
		if !ok {
			t.Errorf("%s variable %s: %q holds no PromQL to check", q.Dashboard, q.Variable, q.Expr)
			continue
		}
		q.Expr = Expand(e, byUID[q.Dashboard])
		if strings.Contains(q.Expr, "$") {
			t.Errorf("%s %q%s %s: an undefined variable is left after expanding: %s", q.Dashboard, q.Panel, q.Variable, q.RefID, q.Expr)
		}
		out[q.Dashboard] = append(out[q.Dashboard], q)
	}
	return out
}

// TestQueriesParse sends every query, expanded, through promtool's PromQL
// parser: as the expressions of recording rules in a file that `promtool
// check rules` checks. This avoids a dependency on Prometheus' own Go
// module for its parser.
func TestQueriesParse(t *testing.T) {
	pt := promtooltest.Path(t)
	var b strings.Builder
	b.WriteString("groups:\n")
	n := 0
	for uid, qs := range expandedQueries(t) {
		fmt.Fprintf(&b, "  - name: %s\n    rules:\n", uid)
		for _, q := range qs {
			n++
			// The record name says where the query came from, in
			// promtool's error; the expr is a JSON string, valid YAML.
			e, _ := json.Marshal(q.Expr)
			fmt.Fprintf(&b, "      - record: query_%d\n        expr: %s\n        labels: {panel: %q, ref: %q, variable: %q}\n",
				n, e, q.Panel, q.RefID, q.Variable)
		}
	}
	if n == 0 {
		t.Fatal("no queries")
	}
	p := filepath.Join(t.TempDir(), "queries.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pt, "check", "rules", p).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("SUCCESS: %d rules found", n)) {
		t.Errorf("promtool did not check %d queries:\n%s", n, out)
	}
}

// TestPromtoolCatchesBadQueries: the check above fails on a bad query,
// rather than passing whatever it is given.
func TestPromtoolCatchesBadQueries(t *testing.T) {
	pt := promtooltest.Path(t)
	p := filepath.Join(t.TempDir(), "bad.yml")
	bad := "groups:\n  - name: g\n    rules:\n      - record: query_1\n        expr: \"rate(x[$__rate_interval])\"\n"
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pt, "check", "rules", p).CombinedOutput(); err == nil {
		t.Errorf("promtool accepted an unexpanded query:\n%s", out)
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"target": "node-b", "instance": ".*", "host": "a.b", "__rate_interval": "2m"}
	for _, tc := range []struct{ in, want string }{
		{`x{target="$target"}`, `x{target="node-b"}`},
		{`x{target="${target}"}`, `x{target="node-b"}`},
		{`x{target="[[target]]"}`, `x{target="node-b"}`},
		{`x{instance=~"$instance"}`, `x{instance=~".*"}`},
		{`x{instance=~"${host:regex}"}`, `x{instance=~"a\.b"}`},
		{`x{instance=~"${host:pipe}"}`, `x{instance=~"a.b"}`},
		// vars override builtins; builtins fill the rest.
		{`rate(x[$__rate_interval])`, `rate(x[2m])`},
		{`rate(x[$__interval])`, `rate(x[15s])`},
		{`increase(x[$__range])`, `increase(x[1h])`},
		{`x / $__range_s`, `x / 3600`},
		{`x * ${__range_ms}`, `x * 3600000`},
		// Unknown variables stay, to be found.
		{`x{a="$nope"}`, `x{a="$nope"}`},
		// Ranges are not variables.
		{`rate(x[5m])`, `rate(x[5m])`},
	} {
		if got := Expand(tc.in, vars); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNestedPanels: the panels of a collapsed row are found too.
func TestNestedPanels(t *testing.T) {
	const doc = `{"uid": "x", "panels": [
		{"id": 1, "type": "row", "title": "r", "collapsed": true, "panels": [
			{"id": 2, "type": "timeseries", "title": "inner", "targets": [{"refId": "A", "expr": "up"}]}]},
		{"id": 3, "type": "stat", "title": "outer", "targets": [{"refId": "B", "expr": "vector(1)"}]}]}`
	var d Dashboard
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range d.AllPanels() {
		titles = append(titles, p.Title)
	}
	if want := []string{"r", "inner", "outer"}; !slices.Equal(titles, want) {
		t.Errorf("AllPanels titles %v, want %v", titles, want)
	}
}

func TestQueries(t *testing.T) {
	qs := queries(t)
	found := map[string]bool{}
	for _, q := range qs {
		found[q.Dashboard] = true
		if q.Panel == "" && q.Variable == "" && q.Annotation == "" {
			t.Errorf("query %q comes from nowhere", q.Expr)
		}
		if q.Panel != "" && q.RefID == "" {
			t.Errorf("%s %q: query without refId", q.Dashboard, q.Panel)
		}
	}
	for _, d := range load(t) {
		if !found[d.UID] {
			t.Errorf("no queries from %s", d.UID)
		}
	}
	// The target variable is the documented one.
	var target []Query
	for _, q := range qs {
		if q.Dashboard == "rdma-target" && q.Variable == "target" {
			target = append(target, q)
		}
	}
	if len(target) != 1 || target[0].Expr != "label_values(rdma_probe_success, target)" {
		t.Errorf("rdma-target's target variable: %+v", target)
	}
	if e, ok := target[0].PromQL(); !ok || e != "rdma_probe_success" {
		t.Errorf("PromQL() of %q = %q, %v", target[0].Expr, e, ok)
	}
	for in, want := range map[string]string{
		"label_values(up{job=\"a,b\"}, instance)": "up{job=\"a,b\"}",
		"query_result(topk(5, up))":               "topk(5, up)",
		"label_values(instance)":                  "",
	} {
		got, ok := Query{Variable: "v", Expr: in}.PromQL()
		if got != want || ok != (want != "") {
			t.Errorf("PromQL(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestLinks: every link into a dashboard names one that exists.
func TestLinks(t *testing.T) {
	uids := map[string]bool{}
	for _, d := range load(t) {
		uids[d.UID] = true
	}
	link := regexp.MustCompile(`/d/([A-Za-z0-9_-]+)`)
	for _, d := range load(t) {
		b, _ := Read(d.File)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if !uids[m[1]] {
				t.Errorf("%s links to dashboard %q, which does not exist", d.File, m[1])
			}
		}
	}
}

func TestProvisioningFile(t *testing.T) {
	b, err := os.ReadFile("provisioning.yml")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.APIVersion != 1 || len(p.Providers) != 1 {
		t.Fatalf("provisioning.yml: apiVersion %d, %d providers; want 1 and 1", p.APIVersion, len(p.Providers))
	}
	if pr := p.Providers[0]; pr.Name == "" || pr.Type != "file" || !filepath.IsAbs(pr.Options.Path) {
		t.Errorf("provider %+v: want a named file provider with an absolute path", pr)
	}
}

// TestReadme keeps dashboards/README.md in step: it describes every panel
// and names every dashboard's uid.
func TestReadme(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, d := range load(t) {
		if !strings.Contains(readme, d.File) || !strings.Contains(readme, "`"+d.UID+"`") {
			t.Errorf("README.md does not name %s and its uid", d.File)
		}
		for _, p := range d.AllPanels() {
			if p.Type != "row" && !strings.Contains(readme, "**"+p.Title+"**") {
				t.Errorf("README.md does not describe panel **%s** of %s", p.Title, d.File)
			}
		}
	}
}
