//go:build testbed

package runner

import (
	"context"
	"strings"
	"testing"
)

// TestDeviceLimitsBeforeRuns: a scenario whose second case asks rxe for
// deeper completion queues than it has (max_cqe 32767) is refused before
// its first run, at the place of the case's qps, naming the limit; no
// run starts. (rxe's max_qp is above the 4,096 QPs a test may have, so
// the QP limit itself is covered by rdma's TestDeviceLimits.)
func TestDeviceLimitsBeforeRuns(t *testing.T) {
	sc, err := Parse("limits.yaml", []byte(`cases:
  - {name: fine, op: send, measure: bandwidth, iterations: 10}
  - name: deep
    op: send
    measure: bandwidth
    qps: [1, 2]
    tx_depth: 16384
    rx_depth: 16384
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Execute(context.Background(), sc, vmLoopback(t), Options{Tool: "rdmarun test", File: "limits.yaml"})
	want := `limits.yaml:6:10: case "deep" (qps 1): rdma: a QP's completion queue needs 32784 entries (tx_depth 16384 + rx_depth 16384 + 16), and rxe1 allows at most 32767 (max_cqe, ibv_devinfo -v)`
	if err == nil || !strings.Contains(err.Error(), want) || rep != nil {
		t.Fatalf("Execute = %v, %v; want no report and\n%s", rep, err, want)
	}
}
