package validate

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

var update = flag.Bool("update", false, "write packaging/kubernetes/*.yaml from the chart instead of comparing")

// The plain manifests for `kubectl apply`: the chart rendered with the
// values below. They use the Secret rdmarun-token, which the user makes
// (packaging/kubernetes/README.md), so the responder is on.
// rdmarun-fleet-job.yaml is the fleet Job and its scenario alone, to apply
// beside either of the others.
var manifests = []struct {
	file      string
	args      []string
	fleetOnly bool
}{
	{"rdmarun.yaml", []string{"--set", "token.existingSecret=rdmarun-token"}, false},
	{"rdmarun-privileged.yaml", []string{"--set", "token.existingSecret=rdmarun-token",
		"--set", "rdma.privileged=true", "--set", "rdma.resourceName="}, false},
	{"rdmarun-fleet-job.yaml", []string{"--set", "token.existingSecret=rdmarun-token", "--set", "fleetJob.enabled=true",
		"--show-only", "templates/fleet-configmap.yaml", "--show-only", "templates/fleet-job.yaml"}, true},
}

const manifestHeader = "# Generated from packaging/helm/rdmarun by `make helm-manifests`; do not edit.\n" +
	"# Namespace rdmarun; the token comes from the Secret rdmarun-token (see README.md).\n"

// TestManifestsMatchChart: the committed manifests are a fresh render of
// the chart, and decode strictly. With -update, it writes them.
func TestManifestsMatchChart(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "packaging", "kubernetes")
	for _, m := range manifests {
		t.Run(m.file, func(t *testing.T) {
			// Pinned, so the files do not depend on helm's default.
			want := manifestHeader + render(t, renderCase{name: m.file, args: m.args}, kubeVersions[len(kubeVersions)-1])
			path := filepath.Join(dir, m.file)
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := readFile(t, path)
			if string(got) != want {
				t.Errorf("%s is not a fresh render of the chart; run make helm-manifests", path)
			}
			objs, err := decodeAll(string(got))
			if err != nil {
				t.Fatal(err)
			}
			if m.fleetOnly {
				checkFleetManifest(t, objs)
				return
			}
			for _, msg := range daemonSetProblems(onlyDaemonSet(t, objs)) {
				t.Error(msg)
			}
		})
	}
}

// checkFleetManifest: the fleet file holds the Job and its scenario only,
// and they are the ones the whole chart renders with the same values, so
// the checks of TestFleetJob and TestFleetScenario hold for them.
func checkFleetManifest(t *testing.T, objs []runtime.Object) {
	t.Helper()
	whole := renderFleet(t, fleetJobCase, kubeVersions[len(kubeVersions)-1])
	jobs, cms := findObjects[*batchv1.Job](objs), findObjects[*corev1.ConfigMap](objs)
	if len(objs) != 2 || len(jobs) != 1 || len(cms) != 1 {
		t.Fatalf("want the fleet Job and its ConfigMap only, got %v", kindsOf(objs))
	}
	if !equality.Semantic.DeepEqual(jobs[0].Spec, whole.job) || !equality.Semantic.DeepEqual(cms[0].Data, whole.scenario.Data) {
		t.Error("the fleet Job or scenario differs from the chart's with the same values")
	}
}
