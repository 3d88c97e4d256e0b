//go:build testbed

// TestSoak runs inside the soft-RoCE VM (make soak; make testbed-test runs
// its short form): a real `rdmarun serve` (RDMARUN_BIN) answers on rxe0
// at 10.0.0.1, and SOAK_CLIENTS copies of this test binary, re-run as
// client processes, drive the plan's SOAK_TESTS tests at it from rxe1.
package soak_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmarun/rdmarun/soak"
)

const (
	serveHost    = "10.0.0.1"
	servePort    = "18720"
	metricsPort  = "18721"
	serveDevice  = "rxe0"
	clientDevice = "rxe1"
	// maxConcurrent is the responder's --max-concurrent: small, so the
	// clients and the misbehaving ones that hold a slot meet busy answers.
	maxConcurrent = 4
	// responderStep is the responder's deadline for each control step
	// (peer.ServerConfig's default; rdmarun serve does not change it): the
	// longest a silent or stalled client may hold it.
	responderStep = 10 * time.Second
)

// The environment that makes this binary a client process rather than the
// test, and what the test passes to its clients.
const (
	envRole   = "SOAK_ROLE"
	envAddr   = "SOAK_ADDR"
	envToken  = "SOAK_TOKEN_FILE"
	envSeed   = "SOAK_SEED"
	envTests  = "SOAK_TESTS"
	envCount  = "SOAK_CLIENTS"
	envClient = "SOAK_CLIENT"
	envCase   = "SOAK_CASE"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "client":
		os.Exit(clientMain())
	case "victim":
		os.Exit(victimMain())
	}
	os.Exit(m.Run())
}

// settings are the soak's knobs, from the environment.
type settings struct {
	tests, clients, sampleEvery int
	seed                        uint64
	report                      string
}

func envInt(t *testing.T, name string, def, lo int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo {
		t.Fatalf("%s=%q: want a whole number of at least %d", name, s, lo)
	}
	return n
}

func soakSettings(t *testing.T) settings {
	s := settings{
		tests:   envInt(t, envTests, 120, 1),
		clients: envInt(t, envCount, 4, 1),
		report:  os.Getenv("SOAK_REPORT"),
	}
	s.sampleEvery = envInt(t, "SOAK_SAMPLE_EVERY", max(50, s.tests/20), 1)
	if v := os.Getenv(envSeed); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want the number a soak printed", envSeed, v)
		}
		s.seed = seed
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		s.seed = binary.LittleEndian.Uint64(b[:]) >> 1 // fits an int64 too, for tools that read it as one
	}
	return s
}

// responder is the running `rdmarun serve`.
type responder struct {
	cmd     *exec.Cmd
	logFile string
	started time.Time
	scraper *http.Client
}

func startResponder(t *testing.T, tokenFile string) *responder {
	t.Helper()
	bin := os.Getenv("RDMARUN_BIN")
	if bin == "" {
		t.Fatal("RDMARUN_BIN is not set (make soak sets it)")
	}
	r := &responder{logFile: filepath.Join(t.TempDir(), "serve.log"),
		scraper: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	logf, err := os.Create(r.logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	r.cmd = exec.Command(bin, "serve", "--device", serveDevice, "--listen", net.JoinHostPort(serveHost, servePort),
		"--token-file", tokenFile, "--max-concurrent", strconv.Itoa(maxConcurrent),
		"--metrics-listen", net.JoinHostPort(serveHost, metricsPort), "--log-level", "warn")
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.started = time.Now()
	t.Cleanup(func() { r.stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.goroutines()
		if err == nil {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("rdmarun serve did not serve its metrics within 10 s: %v\n%s", err, r.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// idleBaseline samples the idle responder once it has finished
// starting: its metrics answer before its control listener is up.
func (r *responder) idleBaseline() (soak.Sample, error) {
	time.Sleep(time.Second)
	return r.sample("idle")
}

// stacks has the responder write its goroutines' stacks (rdmarun serve
// does on SIGUSR1) and reads them from its log: the goroutines at rest,
// which go_goroutines, read during a scrape, cannot give (soak.Growth).
func (r *responder) stacks() (soak.Starters, error) {
	const begin, end = "SIGUSR1: goroutine stacks follow\n", "SIGUSR1: end of goroutine stacks\n"
	from := len(r.output())
	if err := r.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := r.output()[from:]
		if b := strings.Index(out, begin); b >= 0 {
			if e := strings.Index(out[b:], end); e >= 0 {
				return soak.ParseGoroutines(out[b+len(begin) : b+e]), nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no goroutine stacks in the responder's log within 10 s of SIGUSR1 (a build before it dumped them?)\n%s", tail(out, 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *responder) output() string {
	b, _ := os.ReadFile(r.logFile)
	return string(b)
}

func (r *responder) stop(t *testing.T) {
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * responderStep):
		_ = r.cmd.Process.Kill()
		<-done
		t.Errorf("rdmarun serve did not stop within %v of SIGINT", 2*responderStep)
	}
}

func (r *responder) goroutines() (int, error) {
	resp, err := r.scraper.Get("http://" + net.JoinHostPort(serveHost, metricsPort) + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	g := fams["go_goroutines"]
	if g == nil || len(g.Metric) != 1 {
		return 0, errors.New("no go_goroutines in the responder's metrics")
	}
	return int(g.Metric[0].GetGauge().GetValue()), nil
}

// sample reads the responder's resources: fds, threads and RSS from
// /proc, goroutines from its metrics, and the kernel's RDMA objects.
func (r *responder) sample(label string) (soak.Sample, error) {
	s := soak.Sample{Label: label, At: time.Since(r.started)}
	pid := r.cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = len(fds)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	st, err := soak.ParseProcStatus(b)
	if err != nil {
		return s, err
	}
	s.Threads, s.RSSBytes = st.Threads, st.RSSBytes
	if s.Goroutines, err = r.goroutines(); err != nil {
		return s, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rdma", "-j", "resource", "show").Output()
	if err != nil {
		return s, fmt.Errorf("rdma resource show: %w", err)
	}
	s.RDMA, err = soak.ParseRDMAResources(out)
	return s, err
}

// clientProc is one client process and what it reported.
type clientProc struct {
	cmd    *exec.Cmd
	stderr string
	done   chan error
}

func startClients(t *testing.T, s settings, tokenFile string, outcomes chan<- soak.Outcome, badLines chan<- string) []*clientProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var procs []*clientProc
	for i := range s.clients {
		p := &clientProc{stderr: filepath.Join(t.TempDir(), fmt.Sprintf("client%d.log", i)), done: make(chan error, 1)}
		errf, err := os.Create(p.stderr)
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(self)
		p.cmd.Env = append(os.Environ(), envRole+"=client", envAddr+"="+net.JoinHostPort(serveHost, servePort),
			envToken+"="+tokenFile, fmt.Sprintf("%s=%d", envSeed, s.seed), fmt.Sprintf("%s=%d", envTests, s.tests),
			fmt.Sprintf("%s=%d", envCount, s.clients), fmt.Sprintf("%s=%d", envClient, i))
		p.cmd.Stderr = errf
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		errf.Close()
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var o soak.Outcome
				if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
					badLines <- fmt.Sprintf("client %d: %q: %v", i, sc.Text(), err)
					continue
				}
				outcomes <- o
			}
			p.done <- p.cmd.Wait()
		}()
		procs = append(procs, p)
	}
	return procs
}

func TestSoak(t *testing.T) {
	s := soakSettings(t)
	t.Logf("soak: seed %d (replay with SOAK_SEED=%d), %d tests from %d client processes, sampled every %d",
		s.seed, s.seed, s.tests, s.clients, s.sampleEvery)
	plan := soak.Plan(s.seed, s.tests)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(fmt.Sprintf("soak-%d\n", s.seed)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startResponder(t, tokenFile)
	idle, err := r.idleBaseline()
	if err != nil {
		t.Fatal(err)
	}
	if idle.Stacks, err = r.stacks(); err != nil {
		t.Fatal(err)
	}
	samples := []soak.Sample{idle}
	fabricBefore := fabricCounters()

	// The clients' own bound: the test's deadline, less time to report.
	deadline := time.Now().Add(time.Hour)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Minute)
	}
	start := time.Now()
	outcomes := make(chan soak.Outcome, 64)
	badLines := make(chan string, 64)
	procs := startClients(t, s, tokenFile, outcomes, badLines)
	tally := soak.NewTally()
	seen := make([]bool, s.tests)
	running := len(procs)
	var failures []string
	fail := func(format string, args ...any) {
		if len(failures) < 50 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	doneCh := make(chan int, len(procs))
	for i, p := range procs {
		go func() {
			err := <-p.done
			if err != nil {
				b, _ := os.ReadFile(p.stderr)
				badLines <- fmt.Sprintf("client %d exited: %v\n%s", i, err, tail(string(b), 2000))
			}
			doneCh <- i
		}()
	}
	record := func(o soak.Outcome) {
		if o.Index < 0 || o.Index >= s.tests || seen[o.Index] {
			fail("outcome for test %d, not in the plan or reported twice", o.Index)
			return
		}
		seen[o.Index] = true
		if want := plan[o.Index].Misbehaviour.String(); o.Kind != want {
			fail("test %d: reported as %s, planned as %s", o.Index, o.Kind, want)
		}
		tally.Add(o)
		if !o.OK {
			fail("test %d (%s %s, %d B, %d QPs): %s", o.Index, o.Kind, o.Test, o.Size, o.QPs, o.Err)
		}
		if tally.Tests%s.sampleEvery != 0 {
			return
		}
		sm, err := r.sample(fmt.Sprintf("after %d", tally.Tests))
		if err != nil {
			t.Fatalf("sampling the responder after %d tests: %v\n%s", tally.Tests, err, tail(r.output(), 4000))
		}
		samples = append(samples, sm)
		// Progress for whoever watches a long run.
		t.Logf("after %d tests (%d failed, %d busy answers): fds %d, goroutines %d, threads %d, RSS %.1f MiB, RDMA %v",
			tally.Tests, tally.Failed, tally.Busy, sm.FDs, sm.Goroutines, sm.Threads, float64(sm.RSSBytes)/(1<<20), sm.RDMA)
	}
	for running > 0 {
		select {
		case o := <-outcomes:
			record(o)
		case l := <-badLines:
			fail("%s", l)
		case <-doneCh:
			running--
		case <-timeout.C:
			// Stop here but still report what ran: a long run that
			// overran its time is worth its table.
			for _, p := range procs {
				_ = p.cmd.Process.Kill()
			}
			fail("the clients had not finished by the test's deadline: %d of %d tests reported", tally.Tests, s.tests)
			for running > 0 {
				select {
				case o := <-outcomes:
					record(o)
				case <-badLines:
				case <-doneCh:
					running--
				}
			}
		}
	}
	// Lines a client wrote just before it exited.
	for drained := false; !drained; {
		select {
		case o := <-outcomes:
			record(o)
		case l := <-badLines:
			fail("%s", l)
		default:
			drained = true
		}
	}
	wall := time.Since(start)
	if tally.Tests == s.tests {
		for i, ok := range seen {
			if !ok {
				fail("test %d (%s) never reported", i, plan[i].Misbehaviour)
			}
		}
	}
	if r.cmd.ProcessState != nil || syscall.Kill(r.cmd.Process.Pid, 0) != nil {
		t.Fatalf("rdmarun serve died during the soak\n%s", tail(r.output(), 4000))
	}

	// Every test is over: the responder's resources must come back. A
	// connection it is still timing out ends within a step; allow two.
	var end soak.Sample
	var growth []string
	maxThreads, maxRSS := bounds(idle)
	settle := time.Now().Add(2 * responderStep)
	for {
		if end, err = r.sample("end"); err != nil {
			t.Fatal(err)
		}
		if end.Stacks, err = r.stacks(); err != nil {
			t.Fatal(err)
		}
		growth = soak.Growth(idle, end, maxThreads, maxRSS)
		if len(growth) == 0 || time.Now().After(settle) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	samples = append(samples, end)

	var report strings.Builder
	if err := soak.WriteReport(&report, s.seed, s.clients, wall, tally, samples); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&report, "fabric counters over the soak: %s\n", fabricDelta(fabricBefore, fabricCounters()))
	fmt.Fprintf(&report, "goroutines at rest (their stacks, on SIGUSR1): %d at idle, %d at the end; the goroutines column is go_goroutines, read during a scrape, the scrape's own included\n",
		idle.Stacks.Total(), end.Stacks.Total())
	fmt.Fprintf(&report, "bounds at the end: threads <= %d, RSS <= %.1f MiB (idle + 3 x max-concurrent; idle + 32 MiB: see bounds in soak_testbed_test.go)\n", maxThreads, float64(maxRSS)/(1<<20))
	t.Log("\n" + report.String())
	if s.report == "" && os.Getenv("TESTBED_RUN_DIR") != "" {
		// In the VM the host is read-only: the export folder is where
		// files come out (make soak SOAK_REPORT=FILE copies it there).
		s.report = filepath.Join(os.Getenv("TESTBED_RUN_DIR"), "export", "soak-report.txt")
	}
	if s.report != "" {
		if err := os.WriteFile(s.report, []byte(report.String()), 0o644); err != nil {
			t.Errorf("writing the report: %v", err)
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
	if len(growth) > 0 {
		t.Errorf("the responder did not come back to its idle baseline within %v of the last test: %s\nits goroutines at rest, by where each was started:\n%sat idle:\n%s",
			2*responderStep, strings.Join(growth, "; "), end.Stacks, idle.Stacks)
	}
	if t.Failed() {
		t.Logf("replay with SOAK_SEED=%d; responder log:\n%s", s.seed, tail(r.output(), 8000))
	}
}

// bounds are what threads and RSS may be at the end. Neither comes back
// to the idle value, by design of the Go runtime, so each gets a bound
// that holds however many tests were served and fails if they grow with
// them:
//
//   - Threads: a thread made for a blocking call (every verbs call is
//     cgo) stays in the runtime's pool for reuse, so the count follows
//     the most calls ever blocked at once, which the responder bounds by
//     --max-concurrent. A test blocks at most three at once (its side's
//     workers, a verbs call of the control path, a port counter read), so
//     idle + 3 x max-concurrent. (Measured over 1,800 tests: idle 8, at
//     most 16, 12 at the end.)
//   - RSS: the Go heap keeps freed pages for a while (the scavenger gives
//     them back over minutes) and grows to twice what is live (GOGC=100).
//     The most a test of the mix registers is a send and a receive area
//     per QP, size x QPs <= 2 MiB each (plan.go's inFlightBytes): 4 MiB,
//     16 MiB for four at once, 32 MiB with the heap's doubling. (Measured
//     over 1,800 tests: idle 21.8 MiB, between 30 and 37 MiB from the
//     first 90 tests to the last, 30.2 MiB at the end: flat, not growing.)
func bounds(idle soak.Sample) (maxThreads int, maxRSS int64) {
	return idle.Threads + 3*maxConcurrent, idle.RSSBytes + 32<<20
}

// fabricCounters sums soft-RoCE's own statistics (hw_counters: send
// errors, retries, sequence errors) over every device and the veths'
// drops: when good tests fail, they say whether the emulated fabric lost
// packets.
func fabricCounters() map[string]uint64 {
	out := map[string]uint64{}
	read := func(prefix, dir string) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err == nil {
				out[prefix+e.Name()] += n
			}
		}
	}
	devs, _ := filepath.Glob("/sys/class/infiniband/*/ports/1/hw_counters")
	for _, d := range devs {
		read("rxe ", d)
	}
	nets, _ := filepath.Glob("/sys/class/net/veth*/statistics")
	for _, d := range nets {
		for _, f := range []string{"rx_dropped", "tx_dropped", "rx_errors", "tx_errors"} {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				continue
			}
			if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				out["veth "+f] += n
			}
		}
	}
	return out
}

func fabricDelta(before, after map[string]uint64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s +%d", k, d))
		}
	}
	return strings.Join(parts, ", ")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
