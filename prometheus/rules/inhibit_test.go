package rules

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// inhibitPath is the example Alertmanager inhibition block that
// prometheus/README.md tells users to paste.
var inhibitPath = filepath.Join("..", "alertmanager", "inhibit.yml")

// inhibitRule is one entry of Alertmanager's inhibit_rules, in the
// matcher syntax (Alertmanager 0.22 and later). Decoded strictly: a
// misspelt key (equals:, source_match:) is an error here, as it is in
// Alertmanager.
type inhibitRule struct {
	SourceMatchers []string `yaml:"source_matchers"`
	TargetMatchers []string `yaml:"target_matchers"`
	Equal          []string `yaml:"equal"`
}

// decodeInhibit decodes an inhibit_rules block strictly. amtool 0.25
// accepts unknown keys inside an inhibit rule (equals: for equal: loads,
// as a rule that inhibits across every label value), so this is the
// check that catches them.
func decodeInhibit(b []byte) ([]inhibitRule, error) {
	var doc struct {
		InhibitRules []inhibitRule `yaml:"inhibit_rules"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if len(doc.InhibitRules) == 0 {
		return nil, errors.New("no inhibit_rules")
	}
	return doc.InhibitRules, nil
}

func loadInhibit(t *testing.T) []inhibitRule {
	t.Helper()
	b, err := os.ReadFile(inhibitPath)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := decodeInhibit(b)
	if err != nil {
		t.Fatalf("%s: %v", inhibitPath, err)
	}
	return rules
}

func TestDecodeInhibitIsStrict(t *testing.T) {
	for _, bad := range []string{
		"inhibit_rules:\n  - source_matchers: ['alertname=\"A\"']\n    equals: [target]\n",
		"inhibit_rule:\n  - equal: [target]\n",
		"inhibit_rules: []\n",
	} {
		if _, err := decodeInhibit([]byte(bad)); err == nil {
			t.Errorf("decodeInhibit accepted %q", bad)
		}
	}
}

// alertnameMatcher is the only matcher the example uses: on alertname,
// one name or an alternation of names.
var alertnameMatcher = regexp.MustCompile(`^alertname(=|=~)"([A-Za-z|]+)"$`)

// alertnames returns the alert names a rule's matchers select.
func alertnames(t *testing.T, matchers []string) []string {
	t.Helper()
	if len(matchers) != 1 {
		t.Fatalf("matchers %q: want exactly one, on alertname", matchers)
	}
	m := alertnameMatcher.FindStringSubmatch(matchers[0])
	if m == nil {
		t.Fatalf("matcher %q is not alertname=\"X\" or alertname=~\"X|Y\"", matchers[0])
	}
	names := strings.Split(m[2], "|")
	if m[1] == "=" && len(names) != 1 {
		t.Fatalf("matcher %q: = takes one name", matchers[0])
	}
	return names
}

// expLabelNames maps each alert to the label names of every firing
// alert in the promtool tests: the labels an alert is known to carry.
func expLabelNames(t *testing.T) map[string][][]string {
	t.Helper()
	out := map[string][][]string{}
	for _, pt := range promtoolTests(t) {
		for _, tc := range pt.Tests {
			for _, a := range tc.AlertTest {
				for _, e := range a.ExpAlerts {
					var names []string
					for k := range e.ExpLabels {
						names = append(names, k)
					}
					out[a.Alertname] = append(out[a.Alertname], names)
				}
			}
		}
	}
	return out
}

// TestInhibitRules: the example inhibits what the issue asks, names only
// alerts that ship, and every label in equal: is one that both the
// inhibiting and the inhibited alerts carry in the promtool tests. A
// label missing on either side would make Alertmanager compare an empty
// value with a set one, and the rule would never inhibit anything.
func TestInhibitRules(t *testing.T) {
	shipped := map[string]bool{}
	for _, r := range allRules(load(t)) {
		if r.Alert != "" {
			shipped[r.Alert] = true
		}
	}
	carried := expLabelNames(t)
	perPair := []string{"RDMAPathDegraded", "RDMAProbeFailing", "RDMAProbeLatencyHigh", "RDMAProbeRetryErrors"}
	want := map[string]struct {
		label    string
		inhibits []string
	}{
		"RDMANodeUnreachable": {"target", perPair},
		"RDMASourceDegraded":  {"source", perPair},
	}
	seen := map[string]bool{}
	for i, r := range loadInhibit(t) {
		sources := alertnames(t, r.SourceMatchers)
		targets := alertnames(t, r.TargetMatchers)
		for _, n := range append(slices.Clone(sources), targets...) {
			if !shipped[n] {
				t.Errorf("inhibit rule %d names %s, which no rule file defines", i, n)
			}
		}
		for _, n := range append(slices.Clone(sources), targets...) {
			if len(carried[n]) == 0 {
				t.Errorf("inhibit rule %d: no promtool test where %s fires, so its labels are unknown", i, n)
			}
			for _, labels := range carried[n] {
				for _, l := range r.Equal {
					if !slices.Contains(labels, l) {
						t.Errorf("inhibit rule %d: equal: %s, but %s fires without it (labels %v)", i, l, n, labels)
					}
				}
			}
		}
		for _, s := range sources {
			w, ok := want[s]
			if !ok {
				continue
			}
			seen[s] = true
			got := slices.Sorted(slices.Values(targets))
			if !slices.Equal(got, w.inhibits) {
				t.Errorf("%s inhibits %v, want %v", s, got, w.inhibits)
			}
			if !slices.Contains(r.Equal, w.label) {
				t.Errorf("%s inhibits with equal %v, want %s among them", s, r.Equal, w.label)
			}
		}
	}
	for s := range want {
		if !seen[s] {
			t.Errorf("no inhibit rule with %s as its source", s)
		}
	}
}

// amtoolRequireEnv, when set, makes a missing amtool a failure, as
// RDMARUN_REQUIRE_PROMTOOL does for promtool.
const amtoolRequireEnv = "RDMARUN_REQUIRE_AMTOOL"

// TestInhibitAmtool has Alertmanager's own config loader (through
// amtool, Debian's prometheus-alertmanager) check the example, wrapped
// in the smallest config that loads: a route to one receiver. The Go
// module for Alertmanager's config types would bring in the AWS SDK
// (through sigv4) for this one check; amtool is the same code.
func TestInhibitAmtool(t *testing.T) {
	amtool := os.Getenv("AMTOOL")
	if amtool == "" {
		var err error
		if amtool, err = exec.LookPath("amtool"); err != nil {
			if os.Getenv(amtoolRequireEnv) != "" {
				t.Fatalf("amtool not found and %s is set: %v", amtoolRequireEnv, err)
			}
			t.Skipf("amtool not found (%v); set %s=1 to make this a failure", err, amtoolRequireEnv)
		}
	}
	b, err := os.ReadFile(inhibitPath)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, inhibit []byte) ([]byte, error) {
		p := filepath.Join(t.TempDir(), name)
		cfg := append([]byte("route: {receiver: none}\nreceivers: [{name: none}]\n"), inhibit...)
		if err := os.WriteFile(p, cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command(amtool, "check-config", p).CombinedOutput()
	}
	out, err := check("alertmanager.yml", b)
	if err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "2 inhibit rules") {
		t.Errorf("amtool did not find the 2 inhibit rules:\n%s", out)
	}
	// And amtool does reject a broken matcher, so the pass above means
	// something.
	if out, err := check("broken.yml", bytes.Replace(b, []byte(`alertname="RDMASourceDegraded"`), []byte(`alertname=="RDMASourceDegraded`), 1)); err == nil {
		t.Errorf("amtool accepted an inhibit rule with a broken matcher:\n%s", out)
	}
}
