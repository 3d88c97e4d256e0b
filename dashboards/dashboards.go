// Package dashboards ships rdmarun_exporter's Grafana dashboards (the JSON
// files in this directory) and reads them back for tests: every query a
// dashboard sends, with Grafana's variables expanded, so a test can check
// it parses and names only metrics the exporter has, or send it to a
// Prometheus that scraped a real exporter.
package dashboards

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.json
var files embed.FS

// Datasource is a panel's, target's or variable's data source reference.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
	Instant    bool        `json:"instant"`
	Format     string      `json:"format"`
}

// Panel is a panel, or a row whose collapsed panels are in Panels.
type Panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Datasource  *Datasource     `json:"datasource"`
	Targets     []Target        `json:"targets"`
	Panels      []Panel         `json:"panels"`
	FieldConfig json.RawMessage `json:"fieldConfig"`
	Options     json.RawMessage `json:"options"`
}

// Variable is a template variable. Query is a string or, as Grafana 10
// saves query variables, an object whose "query" key holds the string.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Datasource *Datasource     `json:"datasource"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
}

// QueryString is the variable's query: the datasource type for a
// datasource variable, label_values(...) and the like for a query one.
func (v Variable) QueryString() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil && o.Query != "" {
		return o.Query
	}
	return v.Definition
}

// Annotation is an annotation query; the dashboards mark firing alerts.
type Annotation struct {
	Name       string      `json:"name"`
	Datasource *Datasource `json:"datasource"`
	Expr       string      `json:"expr"`
}

// Dashboard is one parsed dashboard file.
type Dashboard struct {
	File          string `json:"-"`
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []Annotation `json:"list"`
	} `json:"annotations"`
	Panels []Panel `json:"panels"`
	// Raw is the whole document, for checks on keys the struct leaves out.
	Raw map[string]any `json:"-"`
}

// AllPanels returns every panel, rows and the panels of collapsed rows
// included, in document order.
func (d Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Files lists the embedded dashboard files, sorted.
func Files() []string {
	names, err := fs.Glob(files, "*.json")
	if err != nil {
		panic(err) // the pattern is valid
	}
	sort.Strings(names)
	return names
}

// Read returns a dashboard file's bytes, as Grafana would load them.
func Read(name string) ([]byte, error) {
	return files.ReadFile(name)
}

// Dashboards parses every embedded dashboard.
func Dashboards() ([]Dashboard, error) {
	var out []Dashboard
	for _, name := range Files() {
		b, err := Read(name)
		if err != nil {
			return nil, err
		}
		d := Dashboard{File: name}
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := json.Unmarshal(b, &d.Raw); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Query is one query a dashboard sends to Prometheus.
type Query struct {
	Dashboard string // the dashboard's uid
	Panel     string // the panel's title; empty for variables and annotations
	RefID     string // the target's refId; empty for variables and annotations
	// Variable names the template variable whose query this is, and
	// Annotation the annotation query; both are empty for panel targets.
	Variable   string
	Annotation string
	// Expr is the query as written, Grafana variables and all. For a
	// variable it is Grafana's variable query (label_values(...)); see
	// PromQL.
	Expr string
}

// PromQL returns the PromQL expression inside q, if there is one. A panel
// or annotation query is PromQL already. Of variable queries, the
// selector of label_values(SELECTOR, LABEL) and the expression of
// query_result(EXPR) are; label_values(LABEL) and label_names() name no
// expression and give false.
func (q Query) PromQL() (string, bool) {
	if q.Variable == "" {
		return q.Expr, q.Expr != ""
	}
	s := strings.TrimSpace(q.Expr)
	if inner, ok := call(s, "query_result"); ok {
		return inner, true
	}
	if inner, ok := call(s, "label_values"); ok {
		i := strings.LastIndexByte(inner, ',')
		if i < 0 {
			return "", false
		}
		return strings.TrimSpace(inner[:i]), true
	}
	return "", false
}

// call returns the argument text of fn(...) if s is such a call.
func call(s, fn string) (string, bool) {
	if !strings.HasPrefix(s, fn+"(") || !strings.HasSuffix(s, ")") {
		return "", false
	}
	return strings.TrimSpace(s[len(fn)+1 : len(s)-1]), true
}

// Queries lists every query of every dashboard: panel targets (rows'
// nested panels included), template variable queries (not the datasource
// variable, whose "query" is a plugin type) and annotation queries.
func Queries() ([]Query, error) {
	ds, err := Dashboards()
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, d := range ds {
		for _, v := range d.Templating.List {
			if v.Type == "query" {
				out = append(out, Query{Dashboard: d.UID, Variable: v.Name, Expr: v.QueryString()})
			}
		}
		for _, a := range d.Annotations.List {
			if a.Expr != "" {
				out = append(out, Query{Dashboard: d.UID, Annotation: a.Name, Expr: a.Expr})
			}
		}
		for _, p := range d.AllPanels() {
			for _, t := range p.Targets {
				out = append(out, Query{Dashboard: d.UID, Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
			}
		}
	}
	return out, nil
}

// Builtins are the values Expand gives Grafana's global variables when
// vars does not set them: a 15s scrape interval, so $__rate_interval is
// four of them, and a 1h dashboard range.
var Builtins = map[string]string{
	"__rate_interval":    "1m",
	"__interval":         "15s",
	"__interval_ms":      "15000",
	"__range":            "1h",
	"__range_s":          "3600",
	"__range_ms":         "3600000",
	"__rate_interval_ms": "60000",
}

// varRE matches $name, ${name}, ${name:format} and the old [[name]] and
// [[name:format]]. Names are greedy, so $__range_s is not read as
// $__range followed by "_s".
var varRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::([^}]*))?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)(?::([^\]]*))?\]\]`)

// Expand substitutes Grafana variables in expr so that it can be sent to
// the Prometheus HTTP API: vars first, then Builtins. Values are
// substituted as given, whatever the ${var:format} asks for, except that
// the regex format escapes regular expression metacharacters, as Grafana
// does for a single value; pass a multi-value or All selection as the
// regex Grafana would build (e.g. ".*" or "a|b"), with no format.
// Variables Expand does not know are left as they are, so a caller can
// find them.
func Expand(expr string, vars map[string]string) string {
	return varRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRE.FindStringSubmatch(m)
		name, format := sub[1], sub[2]
		switch {
		case sub[3] != "":
			name = sub[3]
		case sub[4] != "":
			name, format = sub[4], sub[5]
		}
		v, ok := vars[name]
		if !ok {
			v, ok = Builtins[name]
		}
		if !ok {
			return m
		}
		if format == "regex" {
			v = regexp.QuoteMeta(v)
		}
		return v
	})
}
