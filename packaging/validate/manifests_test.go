package validate

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "write packaging/kubernetes/*.yaml from the chart instead of comparing")

// The plain manifests for `kubectl apply`: the chart rendered with the
// values below. They use the Secret rdmarun-token, which the user makes
// (packaging/kubernetes/README.md), so the responder is on.
var manifests = []struct {
	file string
	args []string
}{
	{"rdmarun.yaml", []string{"--set", "token.existingSecret=rdmarun-token"}},
	{"rdmarun-privileged.yaml", []string{"--set", "token.existingSecret=rdmarun-token",
		"--set", "rdma.privileged=true", "--set", "rdma.resourceName="}},
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
			for _, msg := range daemonSetProblems(onlyDaemonSet(t, objs)) {
				t.Error(msg)
			}
		})
	}
}
