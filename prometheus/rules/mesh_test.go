package rules

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/promtooltest"
)

// TestMeshAtScale runs the shipped rules on the mesh the exporter builds
// for a larger fleet: a ring of 100 nodes where each probes the next 16,
// so every node has 16 probers and 16 targets. One node is dead both
// ways (32 failing pairs) and one path fails. Every alert that fires is
// listed, so besides the two expected alerts nothing else may fire: not
// RDMAProbeFailing for the 33 failing pairs, not RDMASourceDegraded for
// the dead node's probes. (promtool's query limit keeps the fleet at this
// size; Prometheus' own default allows far more samples per query.)
func TestMeshAtScale(t *testing.T) {
	pt := promtooltest.Path(t)
	const n, k = 100, 16
	node := func(i int) string { return fmt.Sprintf("n%03d", (i+n)%n) }
	dead := node(7)
	badSrc, badTgt := node(50), node(51)

	var b strings.Builder
	add := func(series, values string) {
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", series, values)
	}
	for i := range n {
		add(fmt.Sprintf(`up{job="rdmarun_exporter",instance="%s:10520"}`, node(i)), "1x12")
		for j := 1; j <= k; j++ {
			src, tgt := node(i), node(i+j)
			l := fmt.Sprintf(`instance="%s:10520",job="rdmarun_exporter",source="%s",device="rxe0",port="1",target="%s",op="write_imm",size_bytes="2",mode="event"`, src, src, tgt)
			if src == dead || tgt == dead || (src == badSrc && tgt == badTgt) {
				// Failing from 2m on.
				add("rdma_probe_success{"+l+"}", "1 1 0x10")
				add("rdma_probes_total{"+l+`,result="success"}`, "0 4 8x10")
				add("rdma_probes_total{"+l+`,result="timeout"}`, "0 0 0+4x10")
				continue
			}
			add("rdma_probe_success{"+l+"}", "1x12")
			add("rdma_probes_total{"+l+`,result="success"}`, "0+4x12")
			add("rdma_probes_total{"+l+`,result="timeout"}`, "0x12")
		}
	}
	dir := t.TempDir()
	paths, err := Rewrite(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	test := fmt.Sprintf(`rule_files: [%s]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s    promql_expr_test:
      - expr: ALERTS{alertstate="firing"}
        eval_time: 10m
        exp_samples:
          - labels: 'ALERTS{alertname="RDMANodeUnreachable",alertstate="firing",severity="critical",job="rdmarun_exporter",node="%s",target="%s"}'
            value: 1
          - labels: 'ALERTS{alertname="RDMAPathDegraded",alertstate="firing",severity="warning",job="rdmarun_exporter",source="%s",target="%s"}'
            value: 1
`, strings.Join(paths, ", "), b.String(), dead, dead, badSrc, badTgt)
	p := filepath.Join(dir, "mesh_scale_test.yml")
	if err := os.WriteFile(p, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pt, "test", "rules", p).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
