package validate

import (
	"path/filepath"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

var monitoringCase = renderCase{name: "monitoring", args: []string{
	"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true"}}

func findObjects[T runtime.Object](objs []runtime.Object) []T {
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	return found
}

// TestPrometheusRuleEqualsRuleFiles: the PrometheusRule's groups are the
// groups of prometheus/rules/*.yml, in file order, nothing added or lost.
// Both sides are compared as plain YAML data, so a field the operator's
// types do not know would still be compared.
func TestPrometheusRuleEqualsRuleFiles(t *testing.T) {
	root := repoRoot(t)
	var want []any
	for _, name := range globBase(t, filepath.Join(root, "prometheus", "rules"), "*.yml") {
		var f struct {
			Groups []any `json:"groups"`
		}
		if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(root, "prometheus", "rules", name)), &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want = append(want, f.Groups...)
	}
	if len(want) == 0 {
		t.Fatal("no rule groups in prometheus/rules")
	}
	objs, err := decodeAll(render(t, monitoringCase, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	rules := findObjects[*monitoringv1.PrometheusRule](objs)
	if len(rules) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(rules))
	}
	if len(findObjects[*monitoringv1.ServiceMonitor](objs)) != 1 {
		t.Error("serviceMonitor.enabled rendered no ServiceMonitor")
	}
	// Through JSON, as the API server stores it.
	b, err := yaml.Marshal(rules[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Groups, want) {
		gb, _ := yaml.Marshal(got.Groups)
		wb, _ := yaml.Marshal(want)
		t.Errorf("PrometheusRule groups differ from prometheus/rules:\n--- chart\n%s\n--- prometheus/rules\n%s", gb, wb)
	}

	// Off by default: the CRDs may not be installed.
	objs, err = decodeAll(render(t, renderCase{name: "default"}, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(findObjects[*monitoringv1.PrometheusRule](objs)) + len(findObjects[*monitoringv1.ServiceMonitor](objs)) +
		len(findObjects[*monitoringv1.PodMonitor](objs)); n != 0 {
		t.Errorf("the default values render %d prometheus-operator objects; they are opt-in", n)
	}
}

// TestDashboardConfigMapEqualsDashboards: one key per dashboards/*.json,
// each byte-equal to the file, under the Grafana sidecar's label.
func TestDashboardConfigMapEqualsDashboards(t *testing.T) {
	root := repoRoot(t)
	objs, err := decodeAll(render(t, renderCase{name: "default"}, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	for _, c := range findObjects[*corev1.ConfigMap](objs) {
		if c.Labels["grafana_dashboard"] == "1" {
			if cm != nil {
				t.Fatal("two ConfigMaps with the grafana_dashboard label")
			}
			cm = c
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap labelled grafana_dashboard: \"1\"")
	}
	names := globBase(t, filepath.Join(root, "dashboards"), "*.json")
	if len(cm.Data) != len(names) {
		t.Errorf("the ConfigMap has %d dashboards, dashboards/ has %d", len(cm.Data), len(names))
	}
	for _, name := range names {
		got, ok := cm.Data[name]
		if !ok {
			t.Errorf("the ConfigMap lacks %s", name)
			continue
		}
		if want := string(readFile(t, filepath.Join(root, "dashboards", name))); got != want {
			t.Errorf("the ConfigMap's %s differs from dashboards/%s", name, name)
		}
	}
}
