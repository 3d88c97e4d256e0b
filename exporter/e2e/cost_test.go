//go:build testbed

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/runner/report"
)

// costCase is one row of the exporter's cost table: one exporter on rxe1
// probing targets responders on rxe0 with one module; or, with pair, two
// exporters of the build probing each other, each answering the other's
// probes with its own responder (a node of a mesh of two).
type costCase struct {
	targets  int
	mode     string // event or busy_poll
	interval time.Duration
	pair     bool
}

// module is the YAML of the case's one module: the default probe, in
// c's mode every c.interval.
func (c costCase) module() string {
	return fmt.Sprintf("{mode: %s, interval: %v, timeout: %v}", c.mode, c.interval, min(5*time.Second, c.interval*4/5))
}

func (c costCase) String() string {
	if c.pair {
		return fmt.Sprintf("pair/%s/%v", c.mode, c.interval)
	}
	return fmt.Sprintf("%d/%s/%v", c.targets, c.mode, c.interval)
}

// costCases are the rows of docs/measurements.md's Probe cost tables: an idle
// exporter, the default module (10 write_imm round trips of 2 B every
// 15 s) at 1, 4 and 16 targets, and the heavy case of a probe every
// second, each in both modes.
var costCases = []costCase{
	// No targets: what the exporter costs doing nothing, under emulation
	// not nothing (timers, the runtime); the other rows include it.
	{0, "event", 15 * time.Second, false},
	{1, "event", 15 * time.Second, false}, {1, "busy_poll", 15 * time.Second, false},
	{4, "event", 15 * time.Second, false}, {4, "busy_poll", 15 * time.Second, false},
	{16, "event", 15 * time.Second, false}, {16, "busy_poll", 15 * time.Second, false},
	{1, "event", time.Second, false}, {1, "busy_poll", time.Second, false},
	{4, "event", time.Second, false}, {4, "busy_poll", time.Second, false},
	// Two exporters probing each other every second: the setup the
	// exporter's cost was first measured in, so a build from then can be
	// the baseline with its own responders.
	{1, "event", time.Second, true}, {1, "busy_poll", time.Second, true},
}

// costSample is what one exporter cost over the measured window.
type costSample struct {
	cpu       time.Duration // the exporter's user + system time
	responder time.Duration // every responder's, together
	probes    float64       // successful latency probes
	failed    float64
	rtts      uint64
	meanRTT   time.Duration
	// The bucket bounds (powers of two from 1 us) holding the window's
	// median and 90th-percentile round trip: whether the mean is the
	// typical round trip or a few slow ones.
	p50, p90 float64
}

// TestProbeCost measures what an exporter costs in CPU while it probes,
// and the round trips it reports, against `rdmarun bench` for the same op
// and size. It is a measurement, not a check of speed: it fails only when
// probes fail or do not run, because then the table would mean nothing.
// `make exporter-cost` runs it; PROBE_COST_BASELINE names a second
// exporter binary whose rows are interleaved with this build's, so a
// before and after come from the same run.
func TestProbeCost(t *testing.T) {
	if os.Getenv("PROBE_COST") == "" {
		t.Skip("a measurement of minutes; make exporter-cost runs it")
	}
	rdmarun := os.Getenv("RDMARUN_BIN")
	if rdmarun == "" {
		t.Fatal("RDMARUN_BIN is not set (make exporter-cost sets it)")
	}
	window := time.Minute
	if w := os.Getenv("PROBE_COST_WINDOW"); w != "" {
		var err error
		if window, err = time.ParseDuration(w); err != nil {
			t.Fatalf("PROBE_COST_WINDOW=%q: %v", w, err)
		}
	}
	cases := costCases
	if sel := os.Getenv("PROBE_COST_CASES"); sel != "" {
		cases = parseCostCases(t, sel)
	}
	rounds := 1
	if r := os.Getenv("PROBE_COST_ROUNDS"); r != "" {
		var err error
		if rounds, err = strconv.Atoi(r); err != nil || rounds < 1 {
			t.Fatalf("PROBE_COST_ROUNDS=%q: want a whole number of rounds, 1 or more", r)
		}
	}
	builds := []struct{ name, bin string }{{"this build", binary(t)}}
	if b := os.Getenv("PROBE_COST_BASELINE"); b != "" {
		builds = append([]struct{ name, bin string }{{"baseline", b}}, builds...)
	}
	dir := t.TempDir()
	token := writeToken(t, dir)
	maxTargets := 0
	for _, c := range cases {
		maxTargets = max(maxTargets, c.targets)
	}
	responders := make([]*exec.Cmd, maxTargets)
	for i := range responders {
		responders[i] = startResponder(t, rdmarun, token, fmt.Sprintf("%s:%d", addrA, 18601+i))
	}

	bench := map[string]benchRTT{}
	for _, mode := range []string{"event", "busy_poll"} {
		bench[mode] = measureBench(t, rdmarun, token, dir, mode)
	}

	var rows []string
	for _, c := range cases {
		for i := range rounds * len(builds) {
			b := builds[i%len(builds)]
			var s costSample
			if c.pair {
				s = measurePair(t, b.bin, c, window)
			} else {
				s = measureCost(t, b.bin, token, c, window, responders[:c.targets])
			}
			if c.targets > 0 && s.probes == 0 {
				t.Errorf("%s, %v: no probe succeeded in the window (%v failed); the row measures nothing", b.name, c, s.failed)
			}
			perMin := func(d time.Duration) string {
				return fmt.Sprintf("%.2f", d.Seconds()*float64(time.Minute)/float64(window))
			}
			targets, responder := fmt.Sprint(c.targets), perMin(s.responder)
			if c.pair {
				targets, responder = "1 (pair)", "in the exporter"
			}
			row := fmt.Sprintf("| %s | %s | %s | %v | %s | %s | %.0f | %.0f | %.1f | %s | %s | %.1f | %.1f | %.2f |",
				b.name, targets, c.mode, c.interval, perMin(s.cpu), responder,
				s.probes*float64(time.Minute)/float64(window), s.failed,
				us(s.meanRTT), bucketUS(s.p50), bucketUS(s.p90), us(bench[c.mode].mean), us(bench[c.mode].median),
				float64(s.meanRTT)/float64(bench[c.mode].mean))
			// Each row as it comes, so a run cut short still tells.
			t.Log(row)
			rows = append(rows, row)
		}
	}
	t.Logf("exporter cost over %v windows: one exporter on rxe1 probing responders on rxe0 (write_imm, 2 B, 10 round trips per probe); pair: two exporters on rxe0 and rxe1 probing each other, each answering the other's probes (CPU, probes and failures per exporter, the mean of the two); CPU from /proc/PID/stat (user + system); mean RTT from rdma_probe_latency_seconds over the window, its median and 90th percentile as the bucket bound (powers of two) holding them; bench: rdmarun bench, 1000 round trips, same op, size and mode; ratio: mean RTT over bench's\n"+
		"| build | targets | mode | interval | exporter CPU s/min | responders CPU s/min | probes/min | failed in window | mean RTT us | RTT p50 us | RTT p90 us | bench mean RTT us | bench p50 RTT us | ratio |\n"+
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n%s", window, strings.Join(rows, "\n"))
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// parseCostCases reads PROBE_COST_CASES: rows of the table to measure,
// each targets/mode/interval, separated by commas ("4/busy_poll/1s");
// targets "pair" is two exporters probing each other.
func parseCostCases(t *testing.T, sel string) []costCase {
	t.Helper()
	var cases []costCase
	for _, item := range strings.Split(sel, ",") {
		f := strings.Split(strings.TrimSpace(item), "/")
		if len(f) != 3 {
			t.Fatalf("PROBE_COST_CASES: %q is not targets/mode/interval, as in 4/busy_poll/1s", item)
		}
		pair := f[0] == "pair"
		n, err := 1, error(nil)
		if !pair {
			n, err = strconv.Atoi(f[0])
		}
		if err != nil || n < 0 {
			t.Fatalf("PROBE_COST_CASES: %q: the number of targets %q is neither a whole number nor pair", item, f[0])
		}
		if f[1] != "event" && f[1] != "busy_poll" {
			t.Fatalf("PROBE_COST_CASES: %q: the mode %q is neither event nor busy_poll", item, f[1])
		}
		every, err := time.ParseDuration(f[2])
		if err != nil || every <= 0 {
			t.Fatalf("PROBE_COST_CASES: %q: the interval %q is not a duration such as 1s", item, f[2])
		}
		cases = append(cases, costCase{n, f[1], every, pair})
	}
	return cases
}

// startResponder runs `rdmarun serve` on rxe0 at addr until the test ends.
func startResponder(t *testing.T, rdmarun, token, addr string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rdmarun, "serve", "--listen", addr, "--device", "rxe0", "--token-file", token, "--max-concurrent", "16")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
	})
	return cmd
}

// measureCost runs one exporter on case c, waits until every target has
// answered a probe (connection set-up and the first probe are not what a
// running exporter costs), and measures over window.
func measureCost(t *testing.T, bin, token string, c costCase, window time.Duration, responders []*exec.Cmd) costSample {
	t.Helper()
	dir := t.TempDir()
	writeToken(t, dir)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "modules:\n  default: %s\n", c.module())
	if c.targets == 0 {
		cfg.WriteString("targets: {}\n")
	} else {
		cfg.WriteString("targets:\n  static:\n")
	}
	for i := range c.targets {
		fmt.Fprintf(&cfg, "    - {name: t%02d, address: \"%s:%d\", module: default}\n", i+1, addrA, 18601+i)
	}
	cfg.WriteString("responder: {enabled: false, token_file: token}\n")
	// The doctor runs at start and reads every port's files: its cost is
	// its own, not probing's.
	config := withoutDoctor(t, bin, dir, cfg.String())
	e := runExporterBinary(t, bin, dir, "cost", freePort(t, "127.0.0.1"), config, "--device=rxe1", "--log.level=info")
	defer func() {
		if err := e.stop(); err != nil {
			t.Errorf("exporter: %v", err)
		}
	}()
	// Not waitFor: a build that cannot keep up with the case (the
	// baseline at 4 targets every second) is measured all the same, its
	// failures in the table.
	for deadline := time.Now().Add(2*c.interval + 20*time.Second); ; time.Sleep(200 * time.Millisecond) {
		s := e.scrape(t)
		n := 0
		for i := range c.targets {
			if s.sum("rdma_probe_success", labels{"target": fmt.Sprintf("t%02d", i+1)}) == 1 {
				n++
			}
		}
		if n == c.targets {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("%+v: only %d of %d targets answered before the window", c, n, c.targets)
			break
		}
	}
	s0, cpu0, resp0 := e.scrape(t), cpuTime(t, e.cmd.Process.Pid), responderCPU(t, responders)
	time.Sleep(window)
	s1, cpu1, resp1 := e.scrape(t), cpuTime(t, e.cmd.Process.Pid), responderCPU(t, responders)
	out := probesBetween(s0, s1).sample()
	out.cpu, out.responder = cpu1-cpu0, resp1-resp0
	return out
}

// measurePair runs two exporters of bin probing each other with case c's
// module (c.targets is 1), each answering the other's probes with its own
// responder, and measures over window. CPU, probes and failures are per
// exporter (the mean of the two); the round trips are both exporters'.
func measurePair(t *testing.T, bin string, c costCase, window time.Duration) costSample {
	t.Helper()
	ends := [2]struct{ addr, device string }{{addrA, "rxe0"}, {addrB, "rxe1"}}
	var es [2]*exporter
	for i, me := range ends {
		s := exporterSpec{name: "pair-" + me.device, device: me.device, responder: me.addr + ":18520",
			target: "peer", targetAt: ends[1-i].addr + ":18520", module: c.module()}
		dir := t.TempDir()
		writeToken(t, dir)
		e := runExporterBinary(t, bin, dir, s.name, freePort(t, "127.0.0.1"), withoutDoctor(t, bin, dir, s.config(true)),
			"--device="+me.device, "--log.level=info")
		defer func() {
			if err := e.stop(); err != nil {
				t.Errorf("exporter %s: %v", e.name, err)
			}
		}()
		es[i] = e
	}
	// As in measureCost, a build that cannot keep up is measured all the
	// same.
	for deadline := time.Now().Add(2*c.interval + 20*time.Second); ; time.Sleep(200 * time.Millisecond) {
		if es[0].scrape(t).sum("rdma_probe_success", labels{}) == 1 && es[1].scrape(t).sum("rdma_probe_success", labels{}) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("%v: the exporters did not both answer a probe before the window", c)
			break
		}
	}
	var s0, s1 [2]scrape
	var cpu0, cpu1 [2]time.Duration
	for i, e := range es {
		s0[i], cpu0[i] = e.scrape(t), cpuTime(t, e.cmd.Process.Pid)
	}
	time.Sleep(window)
	for i, e := range es {
		s1[i], cpu1[i] = e.scrape(t), cpuTime(t, e.cmd.Process.Pid)
	}
	w := probesBetween(s0[0], s1[0]).plus(probesBetween(s0[1], s1[1]))
	out := w.sample()
	out.cpu = (cpu1[0] - cpu0[0] + cpu1[1] - cpu0[1]) / 2
	out.probes, out.failed = out.probes/2, out.failed/2
	return out
}

// probeWindow is what an exporter's probes did between two scrapes.
type probeWindow struct {
	probes, failed float64
	latencySum     float64 // seconds
	latency        histogram
}

func probesBetween(s0, s1 scrape) probeWindow {
	ok := labels{"result": "success"}
	bad := func(s scrape) float64 {
		return s.sum("rdma_probes_total", labels{}) - s.sum("rdma_probes_total", ok)
	}
	return probeWindow{
		probes:     s1.sum("rdma_probes_total", ok) - s0.sum("rdma_probes_total", ok),
		failed:     bad(s1) - bad(s0),
		latencySum: latencySum(s1) - latencySum(s0),
		latency:    s1.histogram("rdma_probe_latency_seconds", labels{}).minus(s0.histogram("rdma_probe_latency_seconds", labels{})),
	}
}

func (w probeWindow) plus(o probeWindow) probeWindow {
	return probeWindow{probes: w.probes + o.probes, failed: w.failed + o.failed,
		latencySum: w.latencySum + o.latencySum, latency: w.latency.plus(o.latency)}
}

// sample is w's part of a costSample: everything but the CPU.
func (w probeWindow) sample() costSample {
	out := costSample{probes: w.probes, failed: w.failed, rtts: w.latency.count}
	if out.rtts > 0 {
		out.meanRTT = time.Duration(w.latencySum / float64(out.rtts) * float64(time.Second))
		out.p50, out.p90 = w.latency.quantileBound(0.5), w.latency.quantileBound(0.9)
	}
	return out
}

// withoutDoctor adds doctor.enabled: false to config when bin accepts
// it: a baseline built before the exporter ran the doctor refuses the
// key, and has no doctor to turn off.
func withoutDoctor(t *testing.T, bin, dir, config string) string {
	t.Helper()
	off := config + "doctor: {enabled: false}\n"
	file := filepath.Join(dir, "doctor-check.yml")
	if err := os.WriteFile(file, []byte(off), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+file, "--config.check")
	cmd.Dir = dir // the token file is relative
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("%s takes no doctor key (%v: %s); it runs no doctor", bin, err, strings.TrimSpace(string(out)))
		return config
	}
	return off
}

// latencySum is the sum of every rdma_probe_latency_seconds series.
func latencySum(s scrape) float64 {
	total := 0.0
	for _, m := range s["rdma_probe_latency_seconds"].GetMetric() {
		total += m.GetHistogram().GetSampleSum()
	}
	return total
}

// cpuTime is a process's user plus system time from /proc/PID/stat.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name may hold spaces; the fields after it do not.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	// utime and stime are fields 14 and 15 of stat(5), 12 and 13 after
	// the name, in clock ticks of 100 Hz on Linux.
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(u+s) * 10 * time.Millisecond
}

func responderCPU(t *testing.T, rs []*exec.Cmd) time.Duration {
	var total time.Duration
	for _, r := range rs {
		total += cpuTime(t, r.Process.Pid)
	}
	return total
}

// benchRTT is `rdmarun bench`'s round trip against the first responder:
// the steady state a probe's latency is compared with.
type benchRTT struct{ mean, median time.Duration }

func measureBench(t *testing.T, rdmarun, token, dir, mode string) benchRTT {
	t.Helper()
	out := filepath.Join(dir, "bench-"+mode+".json")
	cmd := exec.Command(rdmarun, "bench", "--peer", addrA+":18601", "--device", "rxe1", "--token-file", token,
		"--op", "write_imm", "--sizes", "2", "--mode", mode, "--iterations", "1000", "--json", out, "--quiet")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rdmarun bench (%s): %v\n%s", mode, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Result == nil || rep.Runs[0].Result.Latency == nil || rep.Runs[0].Result.Latency.RTT.Mean <= 0 {
		t.Fatalf("rdmarun bench (%s): no round trips in its report: %s", mode, b)
	}
	rtt := rep.Runs[0].Result.Latency.RTT
	return benchRTT{mean: time.Duration(rtt.Mean), median: time.Duration(rtt.P50)}
}

// bucketUS prints a bucket bound in microseconds, as "<= N".
func bucketUS(bound float64) string {
	return fmt.Sprintf("<= %.0f", bound*1e6)
}
