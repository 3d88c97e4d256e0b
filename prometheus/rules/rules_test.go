package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/promtooltest"
)

// wantAlerts is the list of alerts: a renamed or dropped alert
// must be a deliberate change here too, since Alertmanager routes and
// silences refer to these names.
var wantAlerts = []string{
	"RDMAMTUMismatch",
	"RDMANodeUnreachable",
	"RDMAPCIeLinkDegraded",
	"RDMAPathDegraded",
	"RDMAPauseFrameStorm",
	"RDMAPauseStorm",
	"RDMAPortBelowMaximum",
	"RDMAPortNotActive",
	"RDMAPortRateDegraded",
	"RDMAPortRetryCountersRising",
	"RDMAProbeAbsent",
	"RDMAProbeBandwidthLow",
	"RDMAProbeFailing",
	"RDMAProbeLatencyHigh",
	"RDMAProbeRetryErrors",
	"RDMAResponderUnauthenticated",
	"RDMASourceDegraded",
}

const thresholdPrefix = "rdma:alert_threshold:"

func load(t *testing.T) []File {
	t.Helper()
	files, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("loaded %d rule files, want rdma-alerts.yml and rdma-recording.yml", len(files))
	}
	return files
}

func allRules(files []File) []Rule {
	var out []Rule
	for _, f := range files {
		for _, g := range f.Groups {
			out = append(out, g.Rules...)
		}
	}
	return out
}

func TestAlertsAreComplete(t *testing.T) {
	var names []string
	for _, r := range allRules(load(t)) {
		if r.Alert == "" {
			continue
		}
		if !slices.Contains(names, r.Alert) {
			names = append(names, r.Alert)
		}
		if d, err := model.ParseDuration(r.For); err != nil || d <= 0 {
			t.Errorf("%s: for %q is not a positive duration", r.Alert, r.For)
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if !strings.Contains(r.Annotations["description"], "Check first") {
			t.Errorf("%s: the description does not say what to check first", r.Alert)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, wantAlerts) {
		t.Errorf("alerts %v, want %v", names, wantAlerts)
	}
}

// TestThresholdsInOnePlace: every threshold is a constant recording rule,
// defined once and used by some alert, so tuning it is one edit.
func TestThresholdsInOnePlace(t *testing.T) {
	rules := allRules(load(t))
	defined := map[string]int{}
	for _, r := range rules {
		if r.Record != "" {
			defined[r.Record]++
		}
		if strings.HasPrefix(r.Record, thresholdPrefix) && !thresholdExpr.MatchString(r.Expr) {
			t.Errorf("threshold %s is %q, want vector(NUMBER)", r.Record, r.Expr)
		}
	}
	for name, n := range defined {
		if n != 1 {
			t.Errorf("%s is recorded %d times", name, n)
		}
		if !strings.HasPrefix(name, thresholdPrefix) {
			continue
		}
		if !usedByAlert(rules, name) {
			t.Errorf("threshold %s is used by no alert", name)
		}
	}
	// And no alert hides a number of its own in a comparison: a literal
	// after a comparison operator would be a second place to tune.
	literal := regexp.MustCompile(`(>|<|>=|<=)\s*[0-9.]+\b`)
	for _, r := range rules {
		if r.Alert == "" {
			continue
		}
		for _, m := range literal.FindAllString(r.Expr, -1) {
			// Comparisons with the fixed values of a 0/1 gauge are
			// states, not thresholds.
			if !regexp.MustCompile(`^(>|<)\s*0$`).MatchString(m) {
				t.Errorf("%s compares with a literal %q; make it a threshold rule", r.Alert, m)
			}
		}
	}
}

// usedByAlert reports whether an alert reads the series name, directly
// or through recording rules that read it: the mesh alerts read the
// classification rules of the rdma-mesh group, which hold the thresholds.
func usedByAlert(rules []Rule, name string) bool {
	reads := map[string]bool{name: true}
	for grew := true; grew; {
		grew = false
		for _, r := range rules {
			if reads[r.Record] || r.Record == "" {
				continue
			}
			for n := range reads {
				if readsName(r.Expr, n) {
					reads[r.Record], grew = true, true
					break
				}
			}
		}
	}
	for _, r := range rules {
		for n := range reads {
			if r.Alert != "" && readsName(r.Expr, n) {
				return true
			}
		}
	}
	return false
}

// readsName reports whether expr names the series name, as a whole name:
// rdma:mesh_source_targets is not read by an expression that reads only
// rdma:mesh_source_targets_reachable.
func readsName(expr, name string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_:])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_:])`).MatchString(expr)
}

func TestUsedByAlert(t *testing.T) {
	rules := []Rule{
		{Record: "t", Expr: "vector(1)"},
		{Record: "a", Expr: "x > on() group_left() t"},
		{Record: "b", Expr: "a * 2"},
		{Record: "ab", Expr: "b_other"},
		{Alert: "A", Expr: "b == 1"},
		{Record: "unused", Expr: "vector(2)"},
		{Record: "c", Expr: "unused + 1"},
		{Alert: "B", Expr: "c_total > 0 and unused_too"},
	}
	if !usedByAlert(rules, "t") {
		t.Error("t, read by a, read by b, read by alert A, is not used")
	}
	if usedByAlert(rules, "unused") {
		t.Error("unused, read only by c and by no alert, counts as used")
	}
}

// TestReadme keeps prometheus/README.md in step with the rules: it names
// every alert, and each threshold on a line with its shipped value.
func TestReadme(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, a := range wantAlerts {
		if !strings.Contains(readme, a) {
			t.Errorf("README.md does not describe %s", a)
		}
	}
	num := regexp.MustCompile(`[-+0-9.eE]+`)
	for _, r := range allRules(load(t)) {
		if !strings.HasPrefix(r.Record, thresholdPrefix) {
			if r.Record != "" && !strings.Contains(readme, r.Record) {
				t.Errorf("README.md does not mention the recording rule %s", r.Record)
			}
			continue
		}
		value := num.FindString(strings.TrimPrefix(strings.TrimSpace(r.Expr), "vector"))
		found := false
		for _, line := range strings.Split(readme, "\n") {
			found = found || (strings.Contains(line, "`"+r.Record+"`") && strings.Contains(line, "`"+value+"`"))
		}
		if !found {
			t.Errorf("README.md has no line naming `%s` with its value `%s`", r.Record, value)
		}
	}
}

// promtoolTest is the shape of a promtool unit test file, as far as the
// coverage check needs it.
type promtoolTest struct {
	Tests []struct {
		Name      string `yaml:"name"`
		AlertTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func testFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("tests", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool tests in tests/: %v", err)
	}
	return files
}

// promtoolTests reads every promtool test file.
func promtoolTests(t *testing.T) []promtoolTest {
	t.Helper()
	var out []promtoolTest
	for _, path := range testFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var pt promtoolTest
		if err := yaml.Unmarshal(b, &pt); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, pt)
	}
	return out
}

// TestEveryAlertTested: each alert has a promtool case where it fires and
// one where it stays quiet; RDMAProbeAbsent fires once for each reason.
func TestEveryAlertTested(t *testing.T) {
	fires, quiet := map[string]bool{}, map[string]bool{}
	reasons := map[string]bool{}
	for _, pt := range promtoolTests(t) {
		for _, tc := range pt.Tests {
			for _, a := range tc.AlertTest {
				if len(a.ExpAlerts) == 0 {
					quiet[a.Alertname] = true
				} else {
					fires[a.Alertname] = true
				}
				for _, e := range a.ExpAlerts {
					if r := e.ExpLabels["reason"]; r != "" {
						reasons[r] = true
					}
				}
			}
		}
	}
	for _, a := range wantAlerts {
		if !fires[a] {
			t.Errorf("no promtool test where %s fires", a)
		}
		if !quiet[a] {
			t.Errorf("no promtool test where %s stays quiet", a)
		}
	}
	for _, r := range allRules(load(t)) {
		if reason := r.Labels["reason"]; reason != "" && !reasons[reason] {
			t.Errorf("no promtool test where %s fires with reason %s", r.Alert, reason)
		}
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

func TestPromtool(t *testing.T) {
	pt := promtooltest.Path(t)
	run(t, pt, append([]string{"check", "rules"}, Names()...)...)
	run(t, pt, append([]string{"test", "rules"}, testFiles(t)...)...)
}

func TestReplaceRanges(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`rate(x[5m])`, `rate(x[30s])`},
		{`increase(x{status=~"A|B"}[10m]) > 0`, `increase(x{status=~"A|B"}[30s]) > 0`},
		{`max_over_time(x[1d]) * y`, `max_over_time(x[30s]) * y`},
		{`max_over_time(rate(x[5m])[1h:1m])`, `max_over_time(rate(x[30s])[30s:1m])`},
		{`max_over_time(x[1h30m])`, `max_over_time(x[30s])`},
		// Brackets in strings are regexes, not ranges.
		{`x{name=~"[0-9]+s"}[5m]`, `x{name=~"[0-9]+s"}[30s]`},
		{`x{name=~'[5m]'}`, `x{name=~'[5m]'}`},
		{`x{name=~"a\"[5m]"}`, `x{name=~"a\"[5m]"}`},
		{`vector(1)`, `vector(1)`},
	} {
		if got := ReplaceRanges(tc.in, 30*time.Second); got != tc.want {
			t.Errorf("ReplaceRanges(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

const sample = `# A comment that must survive.
groups:
  - name: g
    rules:
      - record: rdma:alert_threshold:x
        expr: vector(0.001)
      - record: r
        expr: rate(a[5m])
      # Why the alert waits.
      - alert: A
        expr: |
          r > on() group_left() rdma:alert_threshold:x
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: 'unchanged {{ $value }}'
      - alert: B
        expr: max_over_time(b[1d]) == 0
`

func TestRewriteYAML(t *testing.T) {
	out, err := RewriteYAML([]byte(sample), Options{
		For: 90 * time.Second, Interval: 5 * time.Second, Range: 20 * time.Second,
		Thresholds: map[string]float64{"rdma:alert_threshold:x": 2.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"# A comment that must survive.", "# Why the alert waits.",
		"interval: 5s", "expr: vector(2.5)", "rate(a[20s])", "max_over_time(b[20s])",
		"summary: 'unchanged {{ $value }}'",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, s)
		}
	}
	var f File
	if err := yaml.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Groups[0].Rules {
		// B had no for: it gets one, so that a test sees it pending
		// first, as with every other alert.
		if r.Alert != "" && r.For != "1m30s" {
			t.Errorf("alert %s: for %q, want 1m30s", r.Alert, r.For)
		}
		if r.Record != "" && r.For != "" {
			t.Errorf("record %s got a for:", r.Record)
		}
	}

	// Zero options change no value.
	same, err := RewriteYAML([]byte(sample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b File
	if err := yaml.Unmarshal([]byte(sample), &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(same, &b); err != nil {
		t.Fatal(err)
	}
	if !equalFiles(a, b) {
		t.Errorf("Options{} changed the rules:\n%s", same)
	}
}

func TestRewriteErrors(t *testing.T) {
	if _, err := RewriteYAML([]byte(sample), Options{Thresholds: map[string]float64{"r": 1}}); err == nil {
		t.Error("setting a threshold on a rule that is not vector(NUMBER) succeeded")
	}
	if _, err := Rewrite(t.TempDir(), Options{Thresholds: map[string]float64{"rdma:alert_threshold:nope": 1}}); err == nil {
		t.Error("setting an unknown threshold succeeded")
	}
	if _, err := RewriteYAML([]byte("rules: []"), Options{}); err == nil {
		t.Error("a file without groups was accepted")
	}
}

func equalFiles(a, b File) bool {
	if len(a.Groups) != len(b.Groups) {
		return false
	}
	for i := range a.Groups {
		ga, gb := a.Groups[i], b.Groups[i]
		if ga.Name != gb.Name || ga.Interval != gb.Interval || len(ga.Rules) != len(gb.Rules) {
			return false
		}
		for j := range ga.Rules {
			ra, rb := ga.Rules[j], gb.Rules[j]
			if ra.Record != rb.Record || ra.Alert != rb.Alert || ra.Expr != rb.Expr || ra.For != rb.For ||
				!mapsEqual(ra.Labels, rb.Labels) || !mapsEqual(ra.Annotations, rb.Annotations) {
				return false
			}
		}
	}
	return true
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRewriteShipped rewrites the real files as an e2e test would and
// checks that only the asked-for values changed.
func TestRewriteShipped(t *testing.T) {
	dir := t.TempDir()
	stale := thresholdPrefix + "probe_stale_seconds"
	paths, err := Rewrite(dir, Options{For: 30 * time.Second, Interval: 10 * time.Second, Range: time.Minute,
		Thresholds: map[string]float64{stale: 60}})
	if err != nil {
		t.Fatal(err)
	}
	orig := load(t)
	if len(paths) != len(orig) {
		t.Fatalf("wrote %v, want %d files", paths, len(orig))
	}
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f File
		if err := yaml.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		for gi, g := range f.Groups {
			if g.Interval != "10s" {
				t.Errorf("%s group %s: interval %q", p, g.Name, g.Interval)
			}
			for ri, r := range g.Rules {
				o := orig[i].Groups[gi].Rules[ri]
				if r.Alert != "" && r.For != "30s" {
					t.Errorf("%s: for %q", r.Alert, r.For)
				}
				if r.Record == stale && r.Expr != "vector(60)" {
					t.Errorf("%s: expr %q", stale, r.Expr)
				}
				if strings.Contains(r.Expr, "[") && !strings.Contains(r.Expr, "[1m]") {
					t.Errorf("%s%s: a range was not rewritten: %s", r.Record, r.Alert, r.Expr)
				}
				if r.Expr != o.Expr && r.Record != stale && ReplaceRanges(o.Expr, time.Minute) != r.Expr {
					t.Errorf("%s%s: expr changed beyond its ranges:\n%s\nwas\n%s", r.Record, r.Alert, r.Expr, o.Expr)
				}
				if !mapsEqual(r.Labels, o.Labels) || !mapsEqual(r.Annotations, o.Annotations) {
					t.Errorf("%s%s: labels or annotations changed", r.Record, r.Alert)
				}
			}
		}
	}
	pt := promtooltest.Path(t)
	run(t, pt, append([]string{"check", "rules"}, paths...)...)
}

// TestRewrittenRulesFireSooner is the e2e use in small: with for: 1m the
// rewritten RDMAProbeFailing fires at 2m, where the shipped one (for: 5m)
// is still pending, and a 60s staleness threshold makes a probe stale
// within minutes.
func TestRewrittenRulesFireSooner(t *testing.T) {
	pt := promtooltest.Path(t)
	dir := t.TempDir()
	paths, err := Rewrite(dir, Options{For: time.Minute, Range: 2 * time.Minute,
		Thresholds: map[string]float64{thresholdPrefix + "probe_stale_seconds": 60}})
	if err != nil {
		t.Fatal(err)
	}
	const labels = `instance="a:10520",job="rdmarun_exporter",device="rxe0",port="1",target="b",op="write_imm",size_bytes="2",mode="event"`
	test := `rule_files: [` + strings.Join(paths, ", ") + `]
evaluation_interval: 30s
tests:
  - interval: 30s
    input_series:
      - series: up{job="rdmarun_exporter",instance="a:10520"}
        values: 1x20
      - series: rdma_probe_success{` + labels + `}
        values: 0x20
      - series: rdma_probes_total{` + labels + `,result="timeout"}
        values: 0+1x20
      - series: rdma_probe_success{` + strings.Replace(labels, `target="b"`, `target="c"`, 1) + `}
        values: 1x20
      - series: rdma_probe_last_success_timestamp_seconds{` + strings.Replace(labels, `target="b"`, `target="c"`, 1) + `}
        values: 1x20
    alert_rule_test:
      - eval_time: 2m
        alertname: RDMAProbeFailing
        exp_alerts:
          - exp_labels: {severity: critical, instance: "a:10520", job: rdmarun_exporter, device: rxe0, port: "1", target: b}
            exp_annotations:
              summary: 'RDMA probes from a:10520 to b are failing (probe kinds failing: 1)'
              description: 'The latest probes of 1 kind(s) (op, size, mode) from rxe0 port 1 on a:10520 to b failed, and they keep failing. Check first rdma_probes_total{result} on the target dashboard for how they fail: completion_error (rdma_probe_completion_errors_total says which status; see RDMAProbeRetryErrors), timeout (the peer or the path stopped answering), or error (the probe could not be set up: the target''s responder is down or unreachable over TCP, a wrong token or TLS setting, no usable GID). The exporter logs each failure at debug level; ` + "`rdmarun bench --peer`" + ` from the same host reproduces it by hand.'
      - eval_time: 4m
        alertname: RDMAProbeAbsent
        exp_alerts:
          - exp_labels: {severity: warning, reason: stale, instance: "a:10520", job: rdmarun_exporter, device: rxe0, port: "1", target: c, op: write_imm, size_bytes: "2", mode: event}
            exp_annotations:
              summary: 'No new RDMA probe result from a:10520 to c for 3m 59s'
              description: 'The write_imm probe (2 B) from a:10520 to c last succeeded 3m 59s ago and has not run since. Check first rdmarun_exporter_scheduler_lag_seconds on a:10520 (a rate cap, max_probes_per_second, too low for the number of targets delays every probe), then the exporter''s log and whether the module''s interval is longer than the threshold.'
`
	p := filepath.Join(dir, "e2e_test.yml")
	if err := os.WriteFile(p, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, pt, "test", "rules", p)
}
