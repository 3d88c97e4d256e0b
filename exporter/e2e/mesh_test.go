//go:build testbed

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/exporter/mesh"
	"github.com/rdmarun/rdmarun/prometheus/rules"
)

// The mesh test needs five testbed hosts (TESTBED_HOSTS=5): host i is
// rxe<i> on veth<i> with 10.0.0.<i+1>. Exporter hI answers on host I;
// every exporter probes from its own host except h2, which probes from
// host 4, so that host 4's link going down is the local NIC of one
// exporter failing while its responder, on host 2, still answers.
const (
	meshHosts     = 5
	meshExporters = 4
	meshK         = 2 // max_targets: fewer than the 3 peers each exporter sees
	meshProbeHost = 4 // h2's probing host
	meshPortBase  = 18710
)

// meshModule is probeModule without the bandwidth probe, every 5 s with a
// 4 s timeout: four exporters and a Prometheus share the VM's two emulated
// CPUs with whatever else the host runs, and a probe's setup (control
// connection, QPs) then took up to 2 s on a healthy mesh, so that a third
// of the probes timed out at 2.5 s. The alerts under test need only
// success and latency.
const meshModule = `{count: 10, interval: 5s, timeout: 4s, qp: {timeout: 15}}`

// meshScrapeInterval is longer than the other tests' 2 s because a scrape
// costs an exporter about 0.1 CPU-second under emulation. Measured in this
// VM with the four exporters probing: scraped every 2 s, they kept both
// emulated CPUs busy and a third to half of the healthy mesh's probes
// timed out; every 5 s, the CPUs were 40% idle and every probe succeeded.
const meshScrapeInterval = 5 * time.Second

// meshRules is testRules changed in three ways for this test's time scale:
//   - alerts wait 20 s. A fault reaches the recording rules through each
//     prober's next probe (up to 5 s away), its failure (up to the 4 s
//     timeout) and the next scrape (up to 5 s): up to 14 s apart for two
//     probers. Until a dead node's probers have all seen it, its own
//     failed probes make it look like a degraded source (RDMASourceDegraded
//     was seen pending for 6 s), and the alerts must wait that out as the
//     shipped 5m does. It also keeps a lone failed probe, which emulation
//     produces now and then on a healthy link, from firing;
//   - groups are evaluated every 2 s, halving Prometheus' share of the CPUs;
//   - the path alert's lag factor is out of reach: under emulation a
//     healthy pair's p50 round trip ranged from 0.9 to 6.9 ms in one run
//     (7.6 times apart, against the shipped factor 3), as the vCPUs were
//     busy or not. The test checks the path alert's failing half; the
//     lagging half is covered by the promtool tests.
//
// Expressions and ranges stay as shipped and as testRules has them.
func meshRules() rules.Options {
	o := testRules
	o.For = 20 * time.Second
	o.Interval = 2 * time.Second
	o.Thresholds = map[string]float64{"rdma:alert_threshold:mesh_path_lag_factor": 1000}
	for k, v := range testRules.Thresholds {
		o.Thresholds[k] = v
	}
	return o
}

// startMeshPrometheus is startPrometheus with meshRules, at
// meshScrapeInterval. startPrometheus reads the package's testRules, so
// they are swapped for the call; no test of this package runs in
// parallel.
func startMeshPrometheus(t *testing.T, targets []string) *prometheus {
	t.Helper()
	saved := testRules
	testRules = meshRules()
	defer func() { testRules = saved }()
	return startPrometheus(t, targets, meshScrapeInterval)
}

// The alerts the mesh localises with, and the per-target alert folded
// into them: the test checks that a fault raises the one it expects and
// none of the others.
var activeAlerts = []string{"RDMANodeUnreachable", "RDMASourceDegraded", "RDMAPathDegraded", "RDMAProbeFailing"}

// meshNode is one exporter of the mesh.
type meshNode struct {
	name          string // its mesh source and its target name: h0..h3
	responderHost int
	probeHost     int
	e             *exporter
}

func hostAddr(i int) string   { return fmt.Sprintf("10.0.0.%d", i+1) }
func hostDevice(i int) string { return fmt.Sprintf("rxe%d", i) }

func (n meshNode) responderAt() string {
	return fmt.Sprintf("%s:%d", hostAddr(n.responderHost), meshPortBase+n.responderHost)
}

// meshRotate is a rotation period whose current epoch outlasts the test,
// so that the exporters keep one mesh from start to end: each fault's
// expected alerts are worked out from the pairs probed when it starts.
// Epochs are counted from the Unix epoch, so the shipped hour would end
// during about one run in five of this test; a week, lengthened an hour
// at a time until the current epoch has at least left to run, never does.
func meshRotate(now time.Time, left time.Duration) time.Duration {
	for r := 7 * 24 * time.Hour; ; r += time.Hour {
		if mesh.Next(mesh.Epoch(now, r), r).Sub(now) >= left {
			return r
		}
	}
}

// meshConfig is exporter n's config: the shared target file, a mesh of K,
// its responder on its own host.
func meshConfig(n meshNode, targetFile string, rotate time.Duration) string {
	return fmt.Sprintf(`modules:
  default: %s
targets:
  files: ["%s"]
mesh:
  max_targets: %d
  rotate: %s
  source: %s
responder:
  listen: "%s"
  device: %s
  token_file: token
`, meshModule, targetFile, meshK, rotate, n.name, n.responderAt(), hostDevice(n.responderHost))
}

// meshTargetFile lists every exporter, itself included, as one file all
// of them read: each must find itself in it and leave itself out.
func meshTargetFile(nodes []meshNode) string {
	var b strings.Builder
	for i, n := range nodes {
		fmt.Fprintf(&b, "- {name: %s, address: \"%s\", module: default, labels: {rack: r%d}}\n", n.name, n.responderAt(), i/2)
	}
	return b.String()
}

// startMesh starts the four exporters on one shared target file.
func startMesh(t *testing.T) []meshNode {
	t.Helper()
	if os.Getenv("TESTBED_HOSTS") != fmt.Sprint(meshHosts) {
		t.Fatalf("TESTBED_HOSTS is %q; TestMesh needs %d hosts (make testbed-test runs it so)", os.Getenv("TESTBED_HOSTS"), meshHosts)
	}
	nodes := make([]meshNode, meshExporters)
	for i := range nodes {
		nodes[i] = meshNode{name: fmt.Sprintf("h%d", i), responderHost: i, probeHost: i}
	}
	nodes[2].probeHost = meshProbeHost
	shared := t.TempDir()
	targetFile := filepath.Join(shared, "targets.yml")
	if err := os.WriteFile(targetFile, []byte(meshTargetFile(nodes)), 0o644); err != nil {
		t.Fatal(err)
	}
	rotate := meshRotate(time.Now(), time.Hour)
	t.Logf("mesh: %d exporters, max_targets %d, rotate %v, target file:\n%s", len(nodes), meshK, rotate, meshTargetFile(nodes))
	for i := range nodes {
		n := &nodes[i]
		dir := t.TempDir()
		writeToken(t, dir)
		var flags []string
		if n.probeHost != n.responderHost {
			flags = append(flags, "--device="+hostDevice(n.probeHost))
		}
		n.e = runExporter(t, dir, n.name, freePort(t, "127.0.0.1"), meshConfig(*n, targetFile, rotate), flags...)
	}
	return nodes
}

// meshPair is one source probing one target.
type meshPair struct{ source, target string }

func (p meshPair) String() string { return p.source + "->" + p.target }

// probedPairs reads, from every exporter's /metrics, which targets it
// probes, and checks what each one says about itself: the mesh's
// self-metrics, the source label, its probing device, never itself.
func probedPairs(t *testing.T, nodes []meshNode) ([]meshPair, float64) {
	t.Helper()
	var pairs []meshPair
	epoch := -1.0
	for _, n := range nodes {
		s := n.e.scrape(t)
		if v := s.sum("rdmarun_exporter_mesh_targets_known", nil); v != meshExporters {
			t.Errorf("%s: rdmarun_exporter_mesh_targets_known %v, want %d (every exporter of the target file, itself included)", n.name, v, meshExporters)
		}
		if v := s.sum("rdmarun_exporter_mesh_targets_selected", nil); v != meshK {
			t.Errorf("%s: rdmarun_exporter_mesh_targets_selected %v, want max_targets %d", n.name, v, meshK)
		}
		e := s.sum("rdmarun_exporter_mesh_epoch", nil)
		switch {
		case epoch < 0:
			epoch = e
		case e != epoch:
			t.Errorf("%s: rdmarun_exporter_mesh_epoch %v, another exporter is at %v: one clock, one epoch", n.name, e, epoch)
		}
		targets := map[string]bool{}
		for _, m := range s["rdma_probe_success"].GetMetric() {
			src, tg, dev := labelValue(m, "source"), labelValue(m, "target"), labelValue(m, "device")
			if src != n.name {
				t.Errorf("%s: a probe series with source %q, want its mesh.source %q", n.name, src, n.name)
			}
			if tg == n.name {
				t.Errorf("%s probes itself: %v", n.name, m.GetLabel())
			}
			// h2's --device picks where its probes go from; the others
			// probe from their responder's device.
			if want := hostDevice(n.probeHost); dev != want {
				t.Errorf("%s: probe series on device %q, want %s", n.name, dev, want)
			}
			targets[tg] = true
		}
		if len(targets) != meshK {
			t.Errorf("%s probes %d targets %v, want %d", n.name, len(targets), targets, meshK)
		}
		for tg := range targets {
			pairs = append(pairs, meshPair{n.name, tg})
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].String() < pairs[j].String() })
	probers := map[string]int{}
	for _, p := range pairs {
		probers[p.target]++
	}
	for _, n := range nodes {
		if probers[n.name] != meshK {
			t.Errorf("%s is probed by %d exporters, want exactly %d (the ring gives each node K probers); pairs %v", n.name, probers[n.name], meshK, pairs)
		}
	}
	return pairs, epoch
}

// want is an alert a fault must raise: its name and the labels that say
// where the fault is.
type want struct {
	name   string
	labels labels
}

func (w want) String() string {
	return activeAlert{name: w.name, labels: w.labels}.String()
}

func (w want) match(a activeAlert) bool {
	if a.name != w.name {
		return false
	}
	for k, v := range w.labels {
		if a.labels[k] != v {
			return false
		}
	}
	return true
}

// verdict sorts the active mesh alerts: which wanted ones fire, and which
// others fire that must not (a mesh alert matching nothing wanted, e.g.
// the node alert for another node, or any per-target alert).
func verdict(active []activeAlert, wants []want) (fired map[string]bool, stray []string, pending []string) {
	fired = map[string]bool{}
	isMesh := map[string]bool{}
	for _, n := range activeAlerts {
		isMesh[n] = true
	}
	for _, a := range active {
		if !isMesh[a.name] {
			continue
		}
		matched := false
		for _, w := range wants {
			if w.match(a) {
				matched = true
				if a.state == "firing" {
					fired[w.String()] = true
				}
			}
		}
		switch {
		case matched:
		case a.state == "firing":
			stray = append(stray, a.String())
		default:
			pending = append(pending, a.String())
		}
	}
	return fired, stray, pending
}

// meshFault runs testbed/fault.sh inside the VM.
func meshFault(args ...string) error {
	script, err := filepath.Abs("../../testbed/fault.sh")
	if err != nil {
		return err
	}
	if out, err := exec.Command(script, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("fault.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// meshTiming is one fault's measured alert times, for the closing table.
type meshTiming struct {
	fault, alerts string
	// From injection to every wanted alert firing; from clear to none of
	// them firing; from clear to a quiet mesh (every pair succeeding, no
	// mesh alert firing or pending). Negative: not reached.
	fire, resolved, quiet time.Duration
	// The longest any other mesh alert was seen pending, under its for.
	pending time.Duration
}

// meshRun is the state the fault subtests share.
type meshRun struct {
	nodes   []meshNode
	prom    *prometheus
	pairs   []meshPair
	epoch   float64
	timings []meshTiming
}

// diagnose logs what a failing fault check needs: every active alert,
// the mesh recording rules and the probe results as Prometheus has them.
// The exporters' log tails follow from runExporter's cleanup.
func (r *meshRun) diagnose(t *testing.T) {
	t.Helper()
	active, err := r.prom.activeAlerts()
	var l []string
	for _, a := range active {
		l = append(l, fmt.Sprintf("%s %s %v", a.state, a, a.labels))
	}
	t.Logf("active alerts (%v):\n%s", err, strings.Join(l, "\n"))
	t.Logf("mesh recording rules:\n%s", r.prom.values(`{__name__=~"rdma:mesh.*"}`))
	t.Logf("probe results:\n%s", r.prom.values(`min by (source, target) (rdma_probe_success)`))
	t.Logf("probes by result over the last 30 s:\n%s", r.prom.values(`sum by (source, target, result) (increase(rdma_probes_total[30s])) > 0`))
	t.Logf("scrapes (seconds; up):\n%s\n%s", r.prom.values(`scrape_duration_seconds`), r.prom.values(`up`))
	t.Logf("p50 latency (RTT) by pair:\n%s", r.prom.values(`max by (source, target) (rdma:probe_latency_seconds:p50_5m)`))
}

// quiet waits until every pair probes successfully, as Prometheus sees
// it, and no mesh alert is active, firing or pending; it returns how long
// that took.
func (r *meshRun) quiet(t *testing.T, limit time.Duration, what string) time.Duration {
	t.Helper()
	npairs := len(r.pairs)
	return waitFor(t, limit, what, func() (bool, string) {
		ok, err := r.prom.query(`min by (source, target) (rdma_probe_success) == 1`)
		if err != nil {
			return false, err.Error()
		}
		alerts, err := r.prom.activeAlerts()
		if err != nil {
			return false, err.Error()
		}
		var active []string
		for _, a := range alerts {
			if containsString(activeAlerts, a.name) {
				active = append(active, a.state+" "+a.String())
			}
		}
		return ok == npairs && len(active) == 0, fmt.Sprintf("%d of %d pairs succeeding; mesh alerts active: %v", ok, npairs, active)
	})
}

// inject runs one fault: from a quiet mesh, the fault goes in; every
// wanted alert must fire, and no other mesh alert, at that moment and for
// hold after; then the fault is cleared and the mesh must go quiet. Both
// times are recorded.
func (r *meshRun) inject(t *testing.T, label string, fault []string, wants []want) {
	t.Helper()
	const hold = 10 * time.Second
	timing := meshTiming{fault: label, fire: -1, resolved: -1, quiet: -1}
	var names []string
	for _, w := range wants {
		names = append(names, w.String())
	}
	timing.alerts = strings.Join(names, " ")
	// Deferred in this order so that a failure is diagnosed while the
	// fault is still in place, and the fault is cleared in any case.
	cleared := false
	defer func() {
		if !cleared {
			if err := meshFault("clear"); err != nil {
				t.Error(err)
			}
		}
	}()
	defer func() { r.timings = append(r.timings, timing) }()
	defer func() {
		if t.Failed() {
			r.diagnose(t)
		}
	}()

	r.quiet(t, 90*time.Second, "a quiet mesh before the fault")
	if err := meshFault(fault...); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	t.Logf("fault.sh %s: waiting for %s", strings.Join(fault, " "), timing.alerts)
	// Other mesh alerts may go pending while the fault spreads over the
	// probers (a dead node's own probes can fail before its probers'),
	// and must resolve before their for; spans keeps when each was first
	// and last seen pending, to show how close they came.
	spans := map[string][2]float64{}
	note := func(pending []string) {
		now := time.Since(start).Seconds()
		for _, s := range pending {
			sp, ok := spans[s]
			if !ok {
				sp[0] = now
				t.Logf("  %6.1f s  pending too: %s", now, s)
			}
			sp[1] = now
			spans[s] = sp
		}
	}
	fire := waitFor(t, 90*time.Second, "wanted alerts firing", func() (bool, string) {
		active, err := r.prom.activeAlerts()
		if err != nil {
			return false, err.Error()
		}
		fired, stray, pending := verdict(active, wants)
		note(pending)
		if len(stray) > 0 {
			t.Fatalf("%.1f s after the fault, before the wanted alerts all fired: %v fire too", time.Since(start).Seconds(), stray)
		}
		return len(fired) == len(wants), fmt.Sprintf("firing of the wanted: %v; pending others: %v", fired, pending)
	})
	timing.fire = fire
	t.Logf("  %6.1f s  firing: %s", fire.Seconds(), timing.alerts)

	// No storm: the wanted alerts go on firing, alone, while the fault
	// lasts. Other alerts (ports, retries) are logged, not judged here.
	var others []string
	for end := time.Now().Add(hold); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		active, err := r.prom.activeAlerts()
		if err != nil {
			t.Fatal(err)
		}
		fired, stray, pending := verdict(active, wants)
		note(pending)
		if len(stray) > 0 || len(fired) != len(wants) {
			t.Fatalf("%.1f s after the fault: firing of the wanted %v (want all of %v), stray mesh alerts firing %v, pending %v",
				time.Since(start).Seconds(), fired, names, stray, pending)
		}
		for _, a := range active {
			if s := a.state + " " + a.String(); !containsString(activeAlerts, a.name) && !containsString(others, s) {
				others = append(others, s)
			}
		}
	}
	t.Logf("  for %v after firing, no other mesh alert fired; other alerts active meanwhile: %v", hold, others)
	var spanLog []string
	for s, sp := range spans {
		spanLog = append(spanLog, fmt.Sprintf("%s from %.1f to %.1f s", s, sp[0], sp[1]))
		timing.pending = max(timing.pending, time.Duration((sp[1]-sp[0])*float64(time.Second)))
	}
	sort.Strings(spanLog)
	t.Logf("  other mesh alerts seen pending, never firing (for: %v): %v", meshRules().For, spanLog)

	cleared = true
	if err := meshFault("clear"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	timing.resolved = waitFor(t, 90*time.Second, "wanted alerts resolved after the fault was cleared", func() (bool, string) {
		active, err := r.prom.activeAlerts()
		if err != nil {
			return false, err.Error()
		}
		fired, _, _ := verdict(active, wants)
		return len(fired) == 0, fmt.Sprintf("still firing: %v", fired)
	})
	t.Logf("  %6.1f s  after clear: no longer firing: %s", timing.resolved.Seconds(), timing.alerts)
	r.quiet(t, 90*time.Second, "a quiet mesh after the fault was cleared")
	timing.quiet = time.Since(start)
	t.Logf("  %6.1f s  after clear: every pair succeeding, no mesh alert active", timing.quiet.Seconds())

	// The faults' expectations hold for the mesh they were worked out on.
	if _, epoch := probedPairs(t, r.nodes); epoch != r.epoch {
		t.Fatalf("the mesh rotated during the fault (epoch %v -> %v); meshRotate should have prevented it", r.epoch, epoch)
	}
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestMesh: four exporters find each other through one target file, each
// probes max_targets 2 of the 3 others, and a real Prometheus with the
// shipped rules names the fault: a host's link down is that node
// unreachable, one path's loss is that path degraded, and the local NIC
// of one exporter down is that source degraded; in each case one fault
// raises one alert, not one per prober or target.
func TestMesh(t *testing.T) {
	nodes := startMesh(t)
	r := &meshRun{nodes: nodes}
	waitFor(t, 30*time.Second, "every exporter probing its share of the mesh", func() (bool, string) {
		n := 0
		for _, node := range nodes {
			if v := node.e.scrape(t).sum("rdmarun_exporter_mesh_targets_selected", nil); v == meshK {
				n++
			}
		}
		return n == len(nodes), fmt.Sprintf("%d of %d exporters with %d targets selected", n, len(nodes), meshK)
	})
	r.pairs, r.epoch = probedPairs(t, nodes)
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("mesh epoch %v, pairs probed: %v", r.epoch, r.pairs)
	probed := map[meshPair]bool{}
	for _, p := range r.pairs {
		probed[p] = true
	}

	webs := make([]string, len(nodes))
	for i, n := range nodes {
		webs[i] = n.e.web
	}
	r.prom = startMeshPrometheus(t, webs)
	waitFor(t, 60*time.Second, "prometheus scraping the four exporters", func() (bool, string) {
		n, err := r.prom.query(`up{job="rdmarun_exporter"} == 1`)
		return n == len(nodes), fmt.Sprintf("%d up, %v", n, err)
	})
	took := r.quiet(t, 120*time.Second, "a healthy mesh: every pair succeeding, no mesh alert")
	// The path alert compares each pair's latency with the fleet's: it
	// must have every pair's before the mesh counts as healthy.
	waitFor(t, 60*time.Second, "the latency quantile of every pair recorded", func() (bool, string) {
		n, err := r.prom.query(`max by (source, target) (rdma:probe_latency_seconds:p50_5m)`)
		return n == len(r.pairs), fmt.Sprintf("%d of %d pairs, %v", n, len(r.pairs), err)
	})
	t.Logf("healthy %v after prometheus started; p50 latency (RTT) by pair:\n%s", took.Round(time.Millisecond),
		r.prom.values(`max by (source, target) (rdma:probe_latency_seconds:p50_5m)`))
	// Quiet while healthy, for longer than any alert's for: nothing fires.
	// A pending alert is logged: one failed probe makes one.
	var pendingSeen []string
	for end := time.Now().Add(2 * meshRules().For); time.Now().Before(end); time.Sleep(time.Second) {
		active, err := r.prom.activeAlerts()
		if err != nil {
			t.Fatal(err)
		}
		_, stray, pending := verdict(active, nil)
		if len(stray) > 0 {
			r.diagnose(t)
			t.Fatalf("mesh alerts firing on a healthy mesh: %v (pending: %v)", stray, pending)
		}
		for _, p := range pending {
			if !containsString(pendingSeen, p) {
				pendingSeen = append(pendingSeen, p)
			}
		}
	}
	t.Logf("healthy mesh for %v: no mesh alert fired; pending for a while: %v", 2*meshRules().For, pendingSeen)

	t.Run("NodeDown", func(t *testing.T) {
		r.inject(t, "host-down 3 (h3's link)", []string{"host-down", "3"},
			[]want{{"RDMANodeUnreachable", labels{"node": "h3", "target": "h3"}}})
	})

	t.Run("PathLoss", func(t *testing.T) {
		// A pair of exporters that probe from their own hosts, so that the
		// hosts' indices are theirs; one probed both ways if there is one,
		// so that both directions' alerts are checked.
		var pick meshPair
		for _, p := range r.pairs {
			if p.source == "h2" || p.target == "h2" {
				continue
			}
			if pick.source == "" || (probed[meshPair{p.target, p.source}] && !probed[meshPair{pick.target, pick.source}]) {
				pick = p
			}
		}
		if pick.source == "" {
			t.Fatalf("no probed pair without h2 among %v", r.pairs)
		}
		wants := []want{{"RDMAPathDegraded", labels{"source": pick.source, "target": pick.target}}}
		if probed[meshPair{pick.target, pick.source}] {
			wants = append(wants, want{"RDMAPathDegraded", labels{"source": pick.target, "target": pick.source}})
		}
		a, b := strings.TrimPrefix(pick.source, "h"), strings.TrimPrefix(pick.target, "h")
		r.inject(t, fmt.Sprintf("path-loss %s %s 100 both (%s)", a, b, pick), []string{"path-loss", a, b, "100", "both"}, wants)
	})

	t.Run("SourceNICDown", func(t *testing.T) {
		r.inject(t, fmt.Sprintf("host-down %d (h2's probing NIC)", meshProbeHost), []string{"host-down", fmt.Sprint(meshProbeHost)},
			[]want{{"RDMASourceDegraded", labels{"node": "h2", "source": "h2"}}})
	})

	// The closing table: one line per fault.
	o := meshRules()
	t.Logf("mesh alert times: Prometheus scrapes every %v and evaluates every %v, alerts `for: %v`, every rule range %v; "+
		"probes every 5 s (10 round trips, 4 s timeout); alerts polled every 0.2 s", meshScrapeInterval, o.Interval, o.For, o.Range)
	t.Logf("| fault | alert(s) | injection -> firing | clear -> resolved | clear -> quiet mesh | other mesh alerts pending at most |")
	for _, tm := range r.timings {
		t.Logf("| %s | %s | %s | %s | %s | %.1f s |", tm.fault, tm.alerts, seconds(tm.fire), seconds(tm.resolved), seconds(tm.quiet), tm.pending.Seconds())
	}
}

func seconds(d time.Duration) string {
	if d < 0 {
		return "not reached"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
