//go:build testbed

// Runs `rdmarun bench` (RDMARUN_BIN) inside the soft-RoCE VM, rxe1 against
// rxe0 in one process: bench is a one-case scenario, so it writes the
// scenario's JSON and JUnit, and --pass decides the exit code.
package runner

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/schematest"
	"github.com/rdmarun/rdmarun/runner/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func benchBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("RDMARUN_BIN")
	if bin == "" {
		t.Fatal("RDMARUN_BIN is not set (make testbed-test sets it)")
	}
	return bin
}

// bench runs rdmarun bench with args and returns its exit code and output.
func bench(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return benchAt(t, "loopback", append([]string{"--peer-device", "rxe0", "--iters", "200"}, args...)...)
}

// benchAt runs rdmarun bench on rxe1 against peer.
func benchAt(t *testing.T, peer string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(benchBin(t), append([]string{"bench", "--peer", peer, "--device", "rxe1"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("rdmarun bench: %v", err)
	return 0, ""
}

func readSchema(t *testing.T) *jsonschema.Schema { return schematest.Compile(t, "report/schema.json") }

func TestBenchOutputsAndPass(t *testing.T) {
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.xml")
	code, out := bench(t, "--json", jsonPath, "--junit", junitPath, "--pass", "p99 < 1s", "--pass", "errors == 0")
	t.Logf("\n%s", out)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := readSchema(t).Validate(inst); err != nil {
		t.Errorf("bench's JSON does not match report/schema.json:\n%v", err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Scenario != "bench" || len(rep.Runs) != 1 || rep.Runs[0].Status != report.Passed || len(rep.Runs[0].Verdicts) != 2 ||
		rep.Runs[0].Result == nil || rep.Runs[0].Result.Latency == nil || rep.Runs[0].Spec.Iterations != 200 {
		t.Errorf("report %+v", rep)
	}
	xmlData, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(xmlData, &suites); err != nil || suites.Tests != 1 || suites.Failures != 0 {
		t.Errorf("JUnit: %v, %+v", err, suites)
	}

	// A condition that cannot hold fails the test: exit 1, and the JSON
	// says which and with what value.
	code, out = bench(t, "--json", jsonPath, "--pass", "p99 < 1ns")
	t.Logf("\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	data, err = os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	rep = report.Report{}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Status != report.Failed || len(rep.Runs[0].Verdicts) != 1 || rep.Runs[0].Verdicts[0].Passed {
		t.Errorf("report %+v", rep.Runs)
	}
}

// TestBenchBandwidthSweep: both measures and two sizes in one bench, the
// JSON on stdout.
func TestBenchBandwidthSweep(t *testing.T) {
	cmd := exec.Command(benchBin(t), "bench", "--device", "rxe1", "--peer-device", "rxe0", "--measure", "both",
		"--sizes", "2,4KiB", "--iters", "8", "--json", "-", "--pass", "msg_rate > 0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, out)
	}
	if rep.Summary.Runs != 4 || rep.Summary.Passed != 4 {
		t.Errorf("summary %+v", rep.Summary)
	}
}

// TestBenchRemote: against `rdmarun serve` bench passes as on loopback;
// against an address nothing listens on, the report's stop reason is
// environment and bench exits 4.
func TestBenchRemote(t *testing.T) {
	addr := "10.0.0.1:18590"
	// Authentication has its own tests (peer); this one is about bench.
	serve := exec.Command(benchBin(t), "serve", "--device", "rxe0", "--listen", addr, "--allow-unauthenticated")
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Kill()
		serve.Wait()
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rdmarun serve did not listen on %s: %v", addr, err)
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	code, out := benchAt(t, addr, "--iters", "50", "--json", jsonPath, "--pass", "p99 < 1s")
	t.Logf("\n%s", out)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}

	code, out = benchAt(t, "10.0.0.1:1", "--iters", "50", "--json", jsonPath)
	t.Logf("\n%s", out)
	if code != 4 {
		t.Errorf("exit %d, want 4", code)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.StopReason != report.StopEnvironment || rep.Summary.Errors != 1 {
		t.Errorf("stop reason %q, summary %+v", rep.StopReason, rep.Summary)
	}
}

// TestBenchMulticastLoopback: bench --multicast auto in this process,
// rxe1 sending to a group that rxe0 joined; the one receiver's count is
// printed and a loss threshold passes on the clean veth pair.
func TestBenchMulticastLoopback(t *testing.T) {
	code, out := bench(t, "--op", "send", "--measure", "bandwidth", "--qp-type", "ud", "--sizes", "1KiB", "--multicast", "auto", "--pass", "loss_ratio < 0.01")
	t.Logf("\n%s", out)
	if code != 0 || !strings.Contains(out, "-> group 239.255.") || !strings.Contains(out, "rxe0: received 200 (") {
		t.Errorf("exit %d; want 0 and rxe0 receiving all 200 messages from a 239.255.0.0/16 group", code)
	}
}
