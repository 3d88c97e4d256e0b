//go:build testbed

package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/rdmarun/rdmarun/internal/netfault"

	"github.com/rdmarun/rdmarun/internal/testcert"
)

// The module's schedule, as probeModule sets it.
const (
	probeInterval = 3 * time.Second
	probeTimeout  = 2500 * time.Millisecond
)

// retryCounters are rxe's hw_counters that count retransmissions and the
// sequence errors that cause them; a lossy link moves them. Also moved by
// loss, but left out of the comparison: duplicate_request, which rxe
// also counts by the thousand when a bandwidth probe overruns its own
// queues on a clean link.
var retryCounters = []string{"completer_retry_err", "rcvd_seq_err", "out_of_seq_request", "retry_exceeded_err"}

// pair starts two exporters that will probe each other, a on rxe0 and b
// on rxe1, once setProbing turns it on.
func pair(t *testing.T) (a, b *exporter) {
	t.Helper()
	a = startExporter(t, exporterSpec{name: "a", device: "rxe0", responder: addrA + ":18700", web: freePort(t, "127.0.0.1"),
		target: "b", targetAt: addrB + ":18701", module: probeModule})
	b = startExporter(t, exporterSpec{name: "b", device: "rxe1", responder: addrB + ":18701", web: freePort(t, "127.0.0.1"),
		target: "a", targetAt: addrA + ":18700", module: probeModule})
	return a, b
}

// healthy reports whether e's probes of target all succeed, with samples
// in the latency histogram and, with probeModule's two series, a bandwidth
// measured.
func healthy(s scrape, target string, minSamples uint64, series ...float64) (bool, string) {
	want := 2.0
	if len(series) > 0 {
		want = series[0]
	}
	l := labels{"target": target}
	ok := s.sum("rdma_probe_success", l)
	n := s.histogram("rdma_probe_latency_seconds", l).count
	bw := s.sum("rdma_probe_bandwidth_bytes_per_second", l)
	why := fmt.Sprintf("target %s: success %v (of %v series), %d latency samples, bandwidth %.0f B/s", target, ok, want, n, bw)
	return ok == want && n >= minSamples && (want < 2 || bw > 0), why
}

// usage is what a leak would grow: each exporter's goroutines and open
// fds, and the kernel's RDMA objects. It is compared only between idle
// moments (neither exporter probing), so that probes in flight, which
// overlap all the time on a loaded host, cannot pass for a leak or hide
// one.
type usage struct {
	goroutines, fds [2]float64
	objects         int
}

func (u usage) String() string {
	return fmt.Sprintf("goroutines %v, open fds %v, RDMA objects %d", u.goroutines, u.fds, u.objects)
}

// measure takes the least of each quantity over a few seconds, so that a
// probe of the other exporter's still finishing is not counted.
func measure(t *testing.T, es ...*exporter) usage {
	t.Helper()
	u := usage{goroutines: [2]float64{math.Inf(1), math.Inf(1)}, fds: [2]float64{math.Inf(1), math.Inf(1)}, objects: math.MaxInt}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for i, e := range es {
			s := e.scrape(t)
			u.goroutines[i] = math.Min(u.goroutines[i], s.sum("go_goroutines", nil))
			u.fds[i] = math.Min(u.fds[i], s.sum("process_open_fds", nil))
		}
		u.objects = min(u.objects, rdmaObjects(t))
	}
	return u
}

// within reports whether u is back at base. Goroutines and fds may sit
// one or two above: the runtime and the HTTP server keep a few of their
// own that come and go.
func (u usage) within(base usage) bool {
	for i := range u.goroutines {
		if u.goroutines[i] > base.goroutines[i]+2 || u.fds[i] > base.fds[i]+1 {
			return false
		}
	}
	return u.objects <= base.objects
}

// startProbing has each exporter probe its target, after the idle
// baseline was taken.
func startProbing(t *testing.T, es ...*exporter) {
	t.Helper()
	for _, e := range es {
		e.setProbing(t, true)
	}
}

// settled turns probing off and waits until the exporters hold no more
// than they did at base, before they ever probed. Probes in flight at the
// reload end within their timeout, on both sides.
func settled(t *testing.T, base usage, es ...*exporter) {
	t.Helper()
	for _, e := range es {
		e.setProbing(t, false)
	}
	var after usage
	waitFor(t, 60*time.Second, "goroutines, fds and RDMA objects back at their baseline once probing stopped", func() (bool, string) {
		after = measure(t, es...)
		return after.within(base), fmt.Sprintf("now %v; baseline %v", after, base)
	})
	t.Logf("after the faults, probing stopped: %v (baseline before any probe: %v)", after, base)
}

func retries(ss ...scrape) float64 {
	total := 0.0
	for _, s := range ss {
		for _, name := range retryCounters {
			if v := s.sum("rdmarun_port_hw_counters_total", labels{"name": name}); !math.IsNaN(v) {
				total += v
			}
		}
	}
	return total
}

// failures counts the probes of target that failed, whatever the cause.
func failures(s scrape, target string) float64 {
	total := 0.0
	for _, m := range s["rdma_probes_total"].GetMetric() {
		if (labels{"target": target}).match(m) && labelValue(m, "result") != "success" {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// TestExportersProbeEachOther: two exporters, on rxe0 and rxe1, probe each
// other across the veth pair. Faults are injected for real: netem loss,
// then the link goes down and comes back. Neither exporter is restarted,
// and what they hold returns to its baseline.
func TestExportersProbeEachOther(t *testing.T) {
	idle := rdmaObjects(t)
	a, b := pair(t)
	es := []*exporter{a, b}
	targets := []string{"b", "a"}
	base := measure(t, a, b)
	t.Logf("baseline, before any probe: %v", base)
	startProbing(t, a, b)

	took := waitFor(t, 60*time.Second, "both exporters probing each other", func() (bool, string) {
		for i, e := range es {
			if ok, why := healthy(e.scrape(t), targets[i], 40); !ok {
				return false, e.name + ": " + why
			}
		}
		return true, ""
	})
	t.Logf("both healthy %v after start", took.Round(time.Millisecond))
	for i, e := range es {
		s := e.scrape(t)
		_, why := healthy(s, targets[i], 0)
		t.Logf("%s: %s", e.name, why)
		// Each answers with the shared token: on, and authenticated.
		if on, open := s.sum("rdmarun_exporter_responder_enabled", nil), s.sum("rdmarun_exporter_responder_unauthenticated", nil); on != 1 || open != 0 {
			t.Errorf("%s: responder enabled %v, unauthenticated %v; want 1 and 0", e.name, on, open)
		}
	}
	// One probe on demand, with its log: every step of a real probe.
	body, err := a.get("/probe?target=" + addrB + ":18701&module=default&debug=true")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"local endpoint ready", "control channel up", "QPs connected", "test started", "test done",
		"probe succeeded", "rdma_probe_success{", "} 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("/probe?debug=true lacks %q:\n%s", want, body)
		}
	}
	t.Logf("/probe?debug=true from a to b:\n%s", body)

	// netem loss: the retry counters and the latency tail rise.
	const window = 12 * time.Second
	s0 := [2]scrape{a.scrape(t), b.scrape(t)}
	time.Sleep(window)
	s1 := [2]scrape{a.scrape(t), b.scrape(t)}
	unloss := netfault.RoCELoss(t, "veth1", "5%")
	time.Sleep(window)
	s2 := [2]scrape{a.scrape(t), b.scrape(t)}
	unloss()

	for _, name := range append(retryCounters, "duplicate_request") {
		l := labels{"name": name}
		// a's scrape has both ports: the collector reads all of sysfs.
		c := s1[0].sum("rdmarun_port_hw_counters_total", l) - s0[0].sum("rdmarun_port_hw_counters_total", l)
		d := s2[0].sum("rdmarun_port_hw_counters_total", l) - s1[0].sum("rdmarun_port_hw_counters_total", l)
		t.Logf("%s: +%v clean, +%v with loss", name, c, d)
	}
	cleanRetries := retries(s1[0]) - retries(s0[0])
	lossRetries := retries(s2[0]) - retries(s1[0])
	t.Logf("retry hw_counters over %v: %v clean, %v with 5%% loss", window, cleanRetries, lossRetries)
	if !(lossRetries > cleanRetries) {
		t.Errorf("retry hw_counters rose by %v with 5%% loss, %v without: want more with loss", lossRetries, cleanRetries)
	}
	var cleanTail, lossTail, cleanN, lossN uint64
	var tailBound float64
	for i := range es {
		l := labels{"target": targets[i]}
		h0, h1, h2 := s0[i].histogram("rdma_probe_latency_seconds", l), s1[i].histogram("rdma_probe_latency_seconds", l), s2[i].histogram("rdma_probe_latency_seconds", l)
		// rxe retransmits after its ACK timeout, tens of milliseconds
		// with the default QP timeout; emulation alone stays below 10 ms.
		tailBound = h0.bound(0.01)
		clean, loss := h1.minus(h0), h2.minus(h1)
		cleanTail += clean.above(tailBound)
		lossTail += loss.above(tailBound)
		cleanN += clean.count
		lossN += loss.count
	}
	t.Logf("samples above %v s: %d of %d clean, %d of %d with 5%% loss", tailBound, cleanTail, cleanN, lossTail, lossN)
	if lossN == 0 || float64(lossTail)/float64(lossN) <= float64(cleanTail)/float64(max(cleanN, 1)) {
		t.Errorf("latency tail above %v s: %d of %d samples with loss, %d of %d without: want a larger share with loss",
			tailBound, lossTail, lossN, cleanTail, cleanN)
	}

	allHealthy := func(what string) {
		t.Helper()
		took := waitFor(t, 30*time.Second, what, func() (bool, string) {
			for i, e := range es {
				if ok, why := healthy(e.scrape(t), targets[i], 0); !ok {
					return false, e.name + ": " + why
				}
			}
			return true, ""
		})
		t.Logf("%s: %v", what, took.Round(time.Millisecond))
	}
	allHealthy("healthy again after 5% loss")

	// Every RoCE packet lost, ARP spared: QPs connect and the data path
	// fails, so probes end with error completions, by status.
	before := [2]scrape{a.scrape(t), b.scrape(t)}
	unloss = netfault.RoCELoss(t, "veth1", "100%")
	lost := time.Now()
	took = waitFor(t, 15*time.Second, "RETRY_EXC_ERR completions counted on both with 100% RoCE loss", func() (bool, string) {
		ok := true
		var why []string
		for i, e := range es {
			l := labels{"target": targets[i], "status": "RETRY_EXC_ERR"}
			s := e.scrape(t)
			n := s.sum("rdma_probe_completion_errors_total", l) - before[i].sum("rdma_probe_completion_errors_total", l)
			v := s.sum("rdma_probe_success", labels{"target": targets[i]})
			ok = ok && n >= 2 && v == 0
			why = append(why, fmt.Sprintf("%s: %v new RETRY_EXC_ERR, success %v", e.name, n, v))
		}
		return ok, strings.Join(why, "; ")
	})
	t.Logf("100%% RoCE loss: RETRY_EXC_ERR on both and success 0 %v after the loss began", took.Round(time.Millisecond))
	unloss()
	t.Logf("loss lasted %v", time.Since(lost).Round(time.Millisecond))
	allHealthy("healthy again after 100% loss")

	// Link down: every probe fails within its timeout, and is counted.
	before = [2]scrape{a.scrape(t), b.scrape(t)}
	netfault.IP(t, "link", "set", "veth1", "down")
	down := time.Now()
	linkUp := func() {
		if out, err := exec.Command("ip", "link", "set", "veth1", "up").CombinedOutput(); err != nil {
			t.Errorf("ip link set veth1 up: %v: %s", err, out)
		}
	}
	defer linkUp()
	took = waitFor(t, 15*time.Second, "success 0 on both exporters after link down", func() (bool, string) {
		var why []string
		ok := true
		for i, e := range es {
			v := e.scrape(t).sum("rdma_probe_success", labels{"target": targets[i]})
			ok = ok && v == 0
			why = append(why, fmt.Sprintf("%s: success %v", e.name, v))
		}
		return ok, strings.Join(why, ", ")
	})
	t.Logf("success 0 on both %v after link down", took.Round(time.Millisecond))
	if limit := probeInterval*11/10 + probeTimeout + time.Second; took > limit {
		t.Errorf("success turned 0 only %v after link down, want within one interval plus the timeout (%v)", took, limit)
	}
	waitFor(t, 15*time.Second, "failed probes counted on both", func() (bool, string) {
		ok := true
		var why []string
		for i, e := range es {
			s := e.scrape(t)
			n := failures(s, targets[i]) - failures(before[i], targets[i])
			ok = ok && n >= 2
			why = append(why, fmt.Sprintf("%s: %v new failed probes", e.name, n))
		}
		return ok, strings.Join(why, ", ")
	})
	for i, e := range es {
		s := e.scrape(t)
		l := labels{"target": targets[i]}
		var parts []string
		for _, m := range s["rdma_probes_total"].GetMetric() {
			if l.match(m) && m.GetCounter().GetValue() > 0 {
				parts = append(parts, fmt.Sprintf("%s/%sB=%v", labelValue(m, "result"), labelValue(m, "size_bytes"), m.GetCounter().GetValue()))
			}
		}
		for _, m := range s["rdma_probe_completion_errors_total"].GetMetric() {
			if l.match(m) && m.GetCounter().GetValue() > 0 {
				parts = append(parts, fmt.Sprintf("status %s/%sB=%v", labelValue(m, "status"), labelValue(m, "size_bytes"), m.GetCounter().GetValue()))
			}
		}
		t.Logf("%s, all probes so far: %s", e.name, strings.Join(parts, " "))
		// Each failed probe gives up within its timeout; a little more
		// for the bookkeeping around it.
		for _, m := range s["rdma_probe_duration_seconds"].GetMetric() {
			if l.match(m) && m.GetGauge().GetValue() > (probeTimeout+500*time.Millisecond).Seconds() {
				t.Errorf("%s: a failed probe took %.3f s, more than its %v timeout", e.name, m.GetGauge().GetValue(), probeTimeout)
			}
		}
		// The gauge holds the last probe only: the log has every one.
		n := 0
		for _, took := range failedProbeTimes(t, e) {
			n++
			if took > probeTimeout+500*time.Millisecond {
				t.Errorf("%s: a failed probe took %v (exporter log), more than its %v timeout", e.name, took, probeTimeout)
			}
		}
		if n == 0 {
			t.Errorf("%s: no failed probe in the exporter's log", e.name)
		}
	}

	// Link up: the same processes recover.
	linkUp()
	upAt := time.Now()
	netfault.WaitActive(t, 20*time.Second, "rxe0", "rxe1")
	allHealthy("healthy again after link up")
	t.Logf("healthy again %v after link up (link was down %v)", time.Since(upAt).Round(time.Millisecond), upAt.Sub(down).Round(time.Millisecond))
	for _, e := range es {
		select {
		case err := <-e.waited:
			t.Fatalf("exporter %s exited: %v", e.name, err)
		default:
		}
	}

	// promtool lints a real scrape of each exporter, probe series and all.
	for _, e := range es {
		body, err := e.get("/metrics")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("promtool", "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on %s's /metrics: %v\n%s", e.name, err, out)
		}
	}

	settled(t, base, a, b)

	for _, e := range es {
		if err := e.stop(); err != nil {
			t.Errorf("exporter %s: %v", e.name, err)
		}
	}
	waitFor(t, 10*time.Second, "RDMA objects back to the idle count once both exporters stopped", func() (bool, string) {
		n := rdmaObjects(t)
		return n == idle, fmt.Sprintf("%d objects, %d before the exporters started", n, idle)
	})
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestExporterTLS: a responder that serves TLS is probed by a module whose
// tls section trusts its certificate, and refuses a module without one.
func TestExporterTLS(t *testing.T) {
	cert, key := testcert.Write(t, addrB)
	token := "tls-token\n"
	dirB, dirA := t.TempDir(), t.TempDir()
	for _, d := range []string{dirA, dirB} {
		if err := os.WriteFile(filepath.Join(d, "token"), []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runExporter(t, dirB, "b-tls", freePort(t, "127.0.0.1"), fmt.Sprintf(`responder:
  listen: "%s:18711"
  device: rxe1
  token_file: token
  tls: {cert_file: "%s", key_file: "%s"}
`, addrB, cert, key))
	a := runExporter(t, dirA, "a", freePort(t, "127.0.0.1"), fmt.Sprintf(`modules:
  tls: {count: 10, interval: 2s, timeout: 1500ms, tls: {ca_file: "%s"}}
  plain: {count: 10, interval: 2s, timeout: 1500ms}
targets:
  static:
    - {name: b-tls, address: "%s:18711", module: tls}
    - {name: b-plain, address: "%s:18711", module: plain}
responder:
  listen: "%s:18710"
  device: rxe0
  token_file: token
`, cert, addrB, addrB, addrA))
	waitFor(t, 30*time.Second, "b probed over TLS, and refused without it", func() (bool, string) {
		s := a.scrape(t)
		ok, why := healthy(s, "b-tls", 10, 1)
		plain := s.sum("rdma_probe_success", labels{"target": "b-plain"})
		refused := failures(s, "b-plain")
		return ok && plain == 0 && refused >= 1, fmt.Sprintf("%s; b-plain: success %v, %v failed probes", why, plain, refused)
	})
	for _, line := range strings.Split(a.log(), "\n") {
		if strings.Contains(line, "probe failed") && strings.Contains(line, ":18711") {
			t.Logf("the plain module's probe, refused: %s", strings.TrimSpace(line))
			break
		}
	}
}

var failedTook = regexp.MustCompile(`msg="probe failed" .*\btook=(\S+)`)

// failedProbeTimes reads the duration of every failed probe from e's
// debug log.
func failedProbeTimes(t *testing.T, e *exporter) []time.Duration {
	t.Helper()
	b, err := os.ReadFile(e.logFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Duration
	for _, m := range failedTook.FindAllSubmatch(b, -1) {
		d, err := time.ParseDuration(string(m[1]))
		if err != nil {
			t.Fatalf("%s's log: took=%s: %v", e.name, m[1], err)
		}
		out = append(out, d)
	}
	return out
}
