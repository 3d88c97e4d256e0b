package dashboards_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/dashboards"
	"github.com/rdmarun/rdmarun/internal/promtooltest"
	"github.com/rdmarun/rdmarun/prometheus/rules"
)

// meshFixture is a ring of four exporters, each probing the next two
// (what the exporter's mesh gives: every node two probers and two
// targets), with node-d's NIC dead both ways and the path node-a ->
// node-c failing. Shares are 0, 1/2 or 1, which avg() gives exactly
// whatever order it adds in.
var (
	meshNodes = []string{"node-a", "node-b", "node-c", "node-d"}
	meshFails = func(src, tgt string) bool {
		return src == "node-d" || tgt == "node-d" || (src == "node-a" && tgt == "node-c")
	}
)

func meshPairs() [][2]string {
	var out [][2]string
	for i, s := range meshNodes {
		for j := 1; j <= 2; j++ {
			out = append(out, [2]string{s, meshNodes[(i+j)%len(meshNodes)]})
		}
	}
	return out
}

// meshSeries writes the fixture's input series: for every pair its probe
// success, result counters and latency buckets (every round trip under
// 10us; failing pairs have none), and each exporter's mesh epoch, one of
// them a rotation ahead.
func meshSeries() string {
	var b strings.Builder
	add := func(series, values string) {
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", series, values)
	}
	for _, p := range meshPairs() {
		l := fmt.Sprintf(`instance="%s:10520",job="rdmarun_exporter",source="%s",device="rxe0",port="1",target="%s",op="write_imm",size_bytes="2",mode="event"`, p[0], p[0], p[1])
		if meshFails(p[0], p[1]) {
			add("rdma_probe_success{"+l+"}", "0x20")
			add("rdma_probes_total{"+l+`,result="success"}`, "0x20")
			add("rdma_probes_total{"+l+`,result="timeout"}`, "0+4x20")
			continue
		}
		add("rdma_probe_success{"+l+"}", "1x20")
		add("rdma_probes_total{"+l+`,result="success"}`, "0+4x20")
		add("rdma_probes_total{"+l+`,result="timeout"}`, "0x20")
		for _, le := range []string{"1e-05", "+Inf"} {
			add("rdma_probe_latency_seconds_bucket{"+l+`,le="`+le+`"}`, "0+100x20")
		}
	}
	for i, n := range meshNodes {
		epoch := "7x20"
		if i == 0 {
			epoch = "8x20"
		}
		add(fmt.Sprintf(`rdmarun_exporter_mesh_epoch{instance="%s:10520",job="rdmarun_exporter"}`, n), epoch)
	}
	return b.String()
}

// meshWant is what each query of the mesh dashboard returns on the
// fixture at 10m, by panel title, as promtool writes series.
var meshWant = map[string][]string{
	"Nodes unreachable":        {`{} 1`},
	"Sources degraded":         {`{} 0`},
	"Pairs failing or lagging": {`{} 5`},
	"Localised pairs":          {`{} 1`},
	"Suspects": {
		// node-d: both probers fail. a, b, c: one of two.
		`rdma:mesh_target_failing:ratio{job="rdmarun_exporter",suspect="node",target="node-d"} 1`,
		`rdma:mesh_target_failing:ratio{job="rdmarun_exporter",suspect="node",target="node-a"} 0.5`,
		`rdma:mesh_target_failing:ratio{job="rdmarun_exporter",suspect="node",target="node-b"} 0.5`,
		`rdma:mesh_target_failing:ratio{job="rdmarun_exporter",suspect="node",target="node-c"} 0.5`,
		// node-a fails to c of its reachable b and c; node-d, which
		// fails to all, is unreachable and not listed as a source.
		`rdma:mesh_source_failing:ratio{job="rdmarun_exporter",source="node-a",suspect="source"} 0.5`,
		`rdma:mesh_pair_degraded{job="rdmarun_exporter",source="node-a",suspect="path",target="node-c"} 1`,
	},
	"p50 latency, source x target": {
		`{source="node-a",target="node-b"} 5e-06`,
		`{source="node-b",target="node-c"} 5e-06`,
		`{source="node-c",target="node-a"} 5e-06`,
	},
	"Failing pairs, source x target": {
		`{source="node-a",target="node-b"} 0`,
		`{source="node-a",target="node-c"} 1`,
		`{source="node-b",target="node-c"} 0`,
		`{source="node-b",target="node-d"} 1`,
		`{source="node-c",target="node-d"} 1`,
		`{source="node-c",target="node-a"} 0`,
		`{source="node-d",target="node-a"} 1`,
		`{source="node-d",target="node-b"} 1`,
	},
	"Mesh epochs in use": {`{} 2`},
}

// meshRawPanels plot the exporter's own series as they are; there is
// nothing of the rules to check in them.
var meshRawPanels = map[string]bool{
	"Mesh targets known and selected by exporter": true,
	"Mesh epoch by exporter":                      true,
	"Probe demand and budget by exporter":         true,
	"Shed probes by exporter":                     true,
}

// TestMeshDashboardOnAMesh runs the mesh dashboard's queries, expanded as
// Grafana sends them, through the shipped rules on a mesh with a dead
// node and a bad path, with promtool: the suspects table names the node,
// the prober and the path, and the matrices have one cell per probed
// pair.
func TestMeshDashboardOnAMesh(t *testing.T) {
	pt := promtooltest.Path(t)
	dir := t.TempDir()
	ruleFiles, err := rules.Rewrite(dir, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files: [%s]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n%s    promql_expr_test:\n",
		strings.Join(ruleFiles, ", "), meshSeries())
	checked := map[string]bool{}
	for _, q := range qs {
		if q.Dashboard != "rdma-mesh" || q.Panel == "" {
			continue
		}
		want, ok := meshWant[q.Panel]
		if !ok {
			if !meshRawPanels[q.Panel] {
				t.Errorf("panel %q of rdma-mesh has no expected result here", q.Panel)
			}
			continue
		}
		checked[q.Panel] = true
		expr := dashboards.Expand(q.Expr, map[string]string{"datasource": "prometheus"})
		e := strings.ReplaceAll(expr, "'", "''")
		fmt.Fprintf(&b, "      - expr: '%s'\n        eval_time: 10m\n        exp_samples:\n", e)
		for _, w := range want {
			labels, value, _ := strings.Cut(w, "} ")
			fmt.Fprintf(&b, "          - labels: '%s}'\n            value: %s\n", labels, value)
		}
	}
	for panel := range meshWant {
		if !checked[panel] {
			t.Errorf("no query of rdma-mesh in panel %q", panel)
		}
	}
	p := filepath.Join(dir, "mesh_dashboard_test.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pt, "test", "rules", p).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
