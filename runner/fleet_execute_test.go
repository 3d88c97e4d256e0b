package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// relayCall is one test the coordinator asked for: A's serve against B's.
type relayCall struct {
	A, B    int // host indexes
	Measure rdma.Measure
	N       int // the how-manieth call for this directed pair, from 1
}

// fakeRelay stands in for the fleet's serves. It books each NIC while a
// test runs on it, so a NIC in two tests at once is caught as it
// happens, and counts the tests running at once.
type fakeRelay struct {
	hosts []fleet.Host
	delay time.Duration
	// answer gives a test's result; nil answers every test healthy.
	answer func(ctx context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error)
	// link gives host A's port rate; nil answers 0, as a relay that
	// does not carry it.
	link func(c relayCall) float64

	mu         sync.Mutex
	booked     map[string]bool
	clashes    []string
	calls      []relayCall
	perPair    map[[2]int]int
	running    int
	maxRunning int
	// doctored lists the hosts (index/device) whose doctor was asked;
	// a host down in answer's eyes does not answer the doctor either.
	doctored []string
	downHost int
}

// Doctor stands in for peer.Doctor: one warning per host asked, or the
// error of a serve that does not answer.
func (f *fakeRelay) Doctor(_ context.Context, cfg peer.ClientConfig, device string, _ int) (*peer.FarReport, error) {
	h := f.host(cfg.Addr)
	f.mu.Lock()
	f.doctored = append(f.doctored, fmt.Sprintf("%d/%s", h, device))
	f.mu.Unlock()
	if f.downHost != 0 && h == f.downHost {
		return nil, &peer.Error{Addr: cfg.Addr, Stage: peer.StageConnecting, Err: errors.New("connection refused")}
	}
	return &peer.FarReport{Addr: cfg.Addr, Report: doctor.Report{Devices: []string{"mlx5_0"}, Checks: []doctor.Check{
		{Name: "cpu.governor", Status: doctor.Warn, Found: fmt.Sprintf("powersave on host %d", h)},
	}}}, nil
}

func (f *fakeRelay) host(addr string) int {
	for i, h := range f.hosts {
		if h.DialAddr() == addr {
			return i
		}
	}
	return -1
}

func (f *fakeRelay) RunVia(ctx context.Context, a peer.ClientConfig, b peer.Remote, spec rdma.Test) (*peer.Relayed, error) {
	res, c, err := f.run(ctx, a, b, spec)
	if err != nil {
		return nil, err
	}
	var link float64
	if f.link != nil {
		link = f.link(c)
	}
	return &peer.Relayed{Result: res, LinkGbps: link}, nil
}

func (f *fakeRelay) run(ctx context.Context, a peer.ClientConfig, b peer.Remote, spec rdma.Test) (*rdma.Result, relayCall, error) {
	c := relayCall{A: f.host(a.Addr), B: f.host(b.Addr), Measure: spec.Measure}
	nics := []string{a.Addr + "/" + a.PeerDevice, b.Addr + "/" + b.Device}
	f.mu.Lock()
	if f.perPair == nil {
		f.perPair, f.booked = map[[2]int]int{}, map[string]bool{}
	}
	f.perPair[[2]int{c.A, c.B}]++
	c.N = f.perPair[[2]int{c.A, c.B}]
	f.calls = append(f.calls, c)
	for _, n := range nics {
		if f.booked[n] {
			f.clashes = append(f.clashes, n)
		}
		f.booked[n] = true
	}
	f.running++
	f.maxRunning = max(f.maxRunning, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		for _, n := range nics {
			delete(f.booked, n)
		}
		f.running--
		f.mu.Unlock()
	}()

	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, c, fmt.Errorf("rdma: run stopped: %w", ctx.Err())
	}
	if f.answer != nil {
		res, err := f.answer(ctx, c, spec)
		return res, c, err
	}
	return measuredAs(spec, 10, 8), c, nil
}

// measuredAs is a result of latencyUs p50 (p99 20% above) or gbps.
func measuredAs(spec rdma.Test, latencyUs, gbps float64) *rdma.Result {
	res := &rdma.Result{Spec: spec}
	if spec.Measure == rdma.MeasureBandwidth {
		res.Bandwidth = &rdma.BandwidthStats{Directions: []rdma.Direction{{BytesPerSecond: gbps * 1e9 / 8}}}
		return res
	}
	ns := latencyUs * 1e3
	res.Latency = &rdma.LatencyStats{RTT: rdma.Summary{Count: 100, Min: ns, P50: ns, P90: ns, P99: 1.2 * ns, P999: 1.2 * ns, P9999: 1.2 * ns, Max: 1.2 * ns, Mean: ns}}
	return res
}

// fleetScenario is testdata/coordinator/cases.yaml over n hosts h0...,
// all-pairs.
func fleetScenario(t *testing.T, n int, edit func(*Fleet)) *Scenario {
	t.Helper()
	sc, err := Load("testdata/coordinator/cases.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	fl := &Fleet{Source: HostSource{Kind: HostsList}, Pattern: fleet.AllPairs}
	for i := range n {
		fl.Hosts = append(fl.Hosts, fleet.Host{Name: fmt.Sprintf("h%d", i), Addr: fmt.Sprintf("10.9.0.%d:18520", i+1)})
	}
	if edit != nil {
		edit(fl)
	}
	if fl.Pairs, err = fl.Pattern.Pairs(fl.Hosts, fl.Options); err != nil {
		t.Fatal(err)
	}
	if fl.Rounds, err = fl.Pattern.Rounds(fl.Pairs, fl.Parallel); err != nil {
		t.Fatal(err)
	}
	sc.Fleet = fl
	return sc
}

func runFleet(t *testing.T, ctx context.Context, sc *Scenario, f *fakeRelay) *report.Report {
	t.Helper()
	f.hosts = sc.Fleet.Hosts
	rep, err := ExecuteFleet(ctx, sc, Relay{Via: f, Doctor: f.Doctor}, Options{Tool: "rdmarun test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.clashes) > 0 {
		t.Errorf("NICs booked by two tests at once: %v", f.clashes)
	}
	return rep
}

func pairOf(r report.Run) string { return r.Pair.A + "->" + r.Pair.B }

// checkSchedule holds a report to the schedule's promises, from its
// timestamps alone: rounds in order and apart, every run inside its
// round, and no two runs sharing a NIC overlapping in time.
func checkSchedule(t *testing.T, rep *report.Report) {
	t.Helper()
	rounds := rep.Fleet.Rounds
	for i, r := range rounds {
		if r.Index != i || r.Finished.Before(r.Started) {
			t.Errorf("round %d: index %d, %v to %v", i, r.Index, r.Started, r.Finished)
		}
		if i > 0 && r.Started.Before(rounds[i-1].Finished) {
			t.Errorf("round %d started %v before round %d finished", i, rounds[i-1].Finished.Sub(r.Started), i-1)
		}
	}
	type span struct {
		run        report.Run
		start, end time.Time
	}
	var spans []span
	for _, r := range rep.Runs {
		if r.Started.IsZero() {
			continue
		}
		end := r.Started.Add(time.Duration(r.Seconds * float64(time.Second)))
		round := rounds[r.Pair.Round]
		if r.Started.Before(round.Started) || end.After(round.Finished.Add(time.Millisecond)) {
			t.Errorf("%s run %d ran outside its round %d", pairOf(r), r.Index, r.Pair.Round)
		}
		spans = append(spans, span{r, r.Started, end})
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if !a.start.Before(b.end) || !b.start.Before(a.end) {
				continue
			}
			pa, pb := a.run.Pair.Pair, b.run.Pair.Pair
			for _, n := range []fleet.NIC{pa.A, pa.B} {
				if n == pb.A || n == pb.B {
					t.Errorf("%s and %s overlap in time on host %d", pairOf(a.run), pairOf(b.run), n.Host)
				}
			}
		}
	}
}

// TestExecuteFleetRounds: six healthy hosts all-pairs run in 5 rounds of
// 3 pairs at once, no NIC in two tests, every run judged and placed, the
// matrices full and no one blamed; parallel: 1 runs one pair at a time.
func TestExecuteFleetRounds(t *testing.T) {
	for _, tc := range []struct {
		parallel, rounds, perRound int
	}{{0, 5, 3}, {1, 15, 1}} {
		t.Run(fmt.Sprintf("parallel=%d", tc.parallel), func(t *testing.T) {
			sc := fleetScenario(t, 6, func(fl *Fleet) { fl.Parallel = tc.parallel })
			f := &fakeRelay{delay: 30 * time.Millisecond}
			rep := runFleet(t, context.Background(), sc, f)
			checkSchedule(t, rep)
			if len(rep.Fleet.Rounds) != tc.rounds {
				t.Fatalf("%d rounds, want %d", len(rep.Fleet.Rounds), tc.rounds)
			}
			for _, r := range rep.Fleet.Rounds {
				if len(r.Pairs) != tc.perRound || r.Attempt != 0 || r.Kind != fleet.Disjoint {
					t.Errorf("round %d: %d pairs, attempt %d, %s", r.Index, len(r.Pairs), r.Attempt, r.Kind)
				}
			}
			if f.maxRunning != tc.perRound {
				t.Errorf("at most %d tests ran at once, want %d (a round's pairs together)", f.maxRunning, tc.perRound)
			}
			if rep.Summary.Passed != 30 || rep.Summary.Runs != 30 || ExitStatus(rep) != 0 {
				t.Errorf("summary %+v, exit %d", rep.Summary, ExitStatus(rep))
			}
			if len(f.doctored) != 0 || rep.Doctor != nil {
				t.Errorf("a healthy fleet asked the doctor of %v (ends %+v)", f.doctored, rep.Doctor)
			}
			seen := map[string]int{}
			for i, r := range rep.Runs {
				if r.Pair == nil || r.Started.IsZero() || len(r.Verdicts) != 1 || r.Result == nil {
					t.Fatalf("run %d: pair %v, started %v, %d verdicts", i, r.Pair, r.Started, len(r.Verdicts))
				}
				if r.Index != i%2 || r.Pair.A != fmt.Sprintf("h%d", r.Pair.Pair.A.Host) {
					t.Errorf("run %d: index %d, pair %+v", i, r.Index, *r.Pair)
				}
				seen[pairOf(r)]++
			}
			if len(seen) != 15 {
				t.Errorf("%d distinct pairs ran, want 15: %v", len(seen), seen)
			}
			var metrics []string
			for _, m := range rep.Fleet.Matrices {
				metrics = append(metrics, m.Metric)
				cells := 0
				for _, row := range m.Cells {
					for _, c := range row {
						if c != nil {
							cells++
							if c.Status != fleet.StatusOK {
								t.Errorf("%s: a cell is %s", m.Metric, c.Status)
							}
						}
					}
				}
				if cells != 15 {
					t.Errorf("%s: %d cells, want 15", m.Metric, cells)
				}
			}
			if want := "[bw 64KiB bandwidth lat 64B RTT p50 lat 64B RTT p99]"; fmt.Sprint(metrics) != want {
				t.Errorf("metrics %v, want %s", metrics, want)
			}
			if m := rep.Fleet.Matrices[0]; !m.HigherIsBetter || m.Median != 1e9 {
				t.Errorf("bandwidth matrix: higher is better %v, median %g B/s, want 1e9", m.HigherIsBetter, m.Median)
			}
			if m := rep.Fleet.Matrices[1]; m.HigherIsBetter || m.Median != 10e-6 {
				t.Errorf("p50 matrix: median %g s, want 10e-6", m.Median)
			}
			if len(rep.Fleet.Suspects) != 0 || rep.Fleet.LagFactor != fleet.DefaultLagFactor || rep.Fleet.Source != "list" {
				t.Errorf("suspects %v, lag factor %g, source %q", rep.Fleet.Suspects, rep.Fleet.LagFactor, rep.Fleet.Source)
			}
		})
	}
}

// down makes host h's serve unreachable: refused when the coordinator
// dials it as A, and when A dials it as B.
func down(h int) func(context.Context, relayCall, rdma.Test) (*rdma.Result, error) {
	return func(_ context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		switch h {
		case c.A:
			return nil, &peer.Error{Addr: "h:1", Stage: peer.StageConnecting, Err: errors.New("connection refused")}
		case c.B:
			return nil, &peer.RelayedError{Via: "a:1", Addr: "h:1", Stage: peer.StageConnecting, Msg: "connection refused", Unreachable: true}
		}
		return measuredAs(spec, 10, 8), nil
	}
}

// TestExecuteFleetUnreachable: a host whose serve does not answer fails
// its own pairs as environment errors, each pair asking it once; the
// others pass, the host is the suspect, and the run exits 1, not 4.
func TestExecuteFleetUnreachable(t *testing.T) {
	sc := fleetScenario(t, 4, nil)
	f := &fakeRelay{answer: down(2), downHost: 2}
	rep := runFleet(t, context.Background(), sc, f)
	for _, r := range rep.Runs {
		p := r.Pair.Pair
		involved := p.A.Host == 2 || p.B.Host == 2
		switch {
		case involved && r.Index == 0 && (r.Status != report.Errored || !strings.HasPrefix(r.Error, "environment: ")):
			t.Errorf("%s run 0: %s %q, want an environment error", pairOf(r), r.Status, r.Error)
		case involved && r.Index == 1 && (r.Status != report.Errored || !strings.HasPrefix(r.Error, "environment, not run: ") || !r.Started.IsZero()):
			t.Errorf("%s run 1: %s %q, want not run for the same reason", pairOf(r), r.Status, r.Error)
		case !involved && r.Status != report.Passed:
			t.Errorf("%s run %d: %s %q, want passed", pairOf(r), r.Index, r.Status, r.Error)
		}
	}
	for _, c := range f.calls {
		if (c.A == 2 || c.B == 2) && (c.N != 1 || c.Measure != rdma.MeasureLatency) {
			t.Errorf("host 2 was asked again after it did not answer: %+v", c)
		}
	}
	if len(f.calls) != 9 { // 3 healthy pairs x 2 runs, 3 pairs with host 2 once each
		t.Errorf("%d tests asked for, want 9", len(f.calls))
	}
	if s := rep.Fleet.Suspects; len(s) != 1 || s[0].Kind != fleet.SuspectHost || s[0].Name != "h2" {
		t.Errorf("suspects %+v, want host h2 alone", s)
	}
	for _, m := range rep.Fleet.Matrices {
		if c := m.Cells[1][2]; c == nil || c.Status != fleet.StatusEnv {
			t.Errorf("%s: h1 -> h2 is %+v, want env", m.Metric, c)
		}
	}
	if rep.StopReason != "" || ExitStatus(rep) != 1 {
		t.Errorf("stop reason %q, exit %d; want none and 1", rep.StopReason, ExitStatus(rep))
	}
	// The suspect's doctor is asked; it does not answer, and its end says so.
	if len(rep.Doctor) != 1 || rep.Doctor[0].Host != "h2" || !strings.Contains(rep.Doctor[0].Error, "connection refused") {
		t.Errorf("doctor ends %+v, want h2's, unanswered", rep.Doctor)
	}
}

// TestExecuteFleetHostSetup: a host whose locked-memory limit is too low
// for the test fails its pairs whether it initiates (its own side, as A
// reports) or responds (as B reported to A). That is the host's set-up,
// not the fabric: a finding about that host, and no suspect at all.
func TestExecuteFleetHostSetup(t *testing.T) {
	const msg = "ibv_reg_mr on rxe2: cannot allocate memory (errno 12); the locked-memory limit is probably too low"
	lowMemlock := func(_ context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		switch 2 {
		case c.A:
			return nil, &peer.RelayedError{Via: "h2:1", Msg: msg, Setup: peer.SetupRelay}
		case c.B:
			return nil, &peer.RelayedError{Via: "a:1", Addr: "h2:1", Stage: peer.StageRemoteSide, Msg: "ctrl: peer h2:1 reported: " + msg, Setup: peer.SetupPeer}
		}
		return measuredAs(spec, 10, 8), nil
	}
	rep := runFleet(t, context.Background(), fleetScenario(t, 4, nil), &fakeRelay{answer: lowMemlock})
	for _, r := range rep.Runs {
		p := r.Pair.Pair
		involved := p.A.Host == 2 || p.B.Host == 2
		switch {
		case involved && r.Status != report.Errored:
			t.Errorf("%s run %d: %s, want errored", pairOf(r), r.Index, r.Status)
		case !involved && r.Status != report.Passed:
			t.Errorf("%s run %d: %s %q, want passed", pairOf(r), r.Index, r.Status, r.Error)
		}
	}
	if s := rep.Fleet.Suspects; len(s) != 0 {
		t.Errorf("suspects %+v, want none: a host's own set-up blames no one", s)
	}
	if f := rep.Fleet.Setup; len(f) != 1 || f[0].Host != "h2" || f[0].Runs != 6 || !strings.Contains(f[0].Error, "locked-memory") {
		t.Errorf("set-up findings %+v, want h2's, 6 runs, naming the locked-memory limit", f)
	}
	var text strings.Builder
	if err := report.Text(&text, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "h2: 6 runs could not run: ") {
		t.Errorf("the text report does not name h2's set-up:\n%s", text.String())
	}
}

// TestExecuteFleetConfirm: bad pairs run again in rounds of their own,
// Attempt k, up to confirm times; a pair whose repeat passes is flaky and
// neither runs again nor is blamed, a pair bad every time is.
func TestExecuteFleetConfirm(t *testing.T) {
	// 0-1 fails its latency threshold every time; 2-3 lags 10x on its
	// first bandwidth run only; 0-2 fails its first latency run only.
	answer := func(_ context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		lat, gbps := 10.0, 8.0
		switch {
		case c.A == 0 && c.B == 1:
			lat = 500
		case c.A == 2 && c.B == 3 && c.N == 2:
			gbps = 1.5 // over the threshold, but 5x below the median
		case c.A == 0 && c.B == 2 && c.N == 1:
			lat = 500
		}
		return measuredAs(spec, lat, gbps), nil
	}
	sc := fleetScenario(t, 4, func(fl *Fleet) { fl.Confirm = 2 })
	f := &fakeRelay{answer: answer}
	rep := runFleet(t, context.Background(), sc, f)
	checkSchedule(t, rep)

	byAttempt := map[int][]string{}
	for _, r := range rep.Fleet.Rounds {
		for _, p := range r.Pairs {
			byAttempt[r.Attempt] = append(byAttempt[r.Attempt], fmt.Sprintf("%d-%d", p.A.Host, p.B.Host))
		}
	}
	for k := range byAttempt {
		slices.Sort(byAttempt[k])
	}
	if got, want := fmt.Sprint(byAttempt), "map[0:[0-1 0-2 0-3 1-2 1-3 2-3] 1:[0-1 0-2 2-3] 2:[0-1]]"; got != want {
		t.Errorf("pairs per attempt %s, want %s", got, want)
	}
	for _, r := range rep.Runs {
		if r.Pair.Attempt != rep.Fleet.Rounds[r.Pair.Round].Attempt {
			t.Errorf("%s run %d: attempt %d in a round of attempt %d", pairOf(r), r.Index, r.Pair.Attempt, rep.Fleet.Rounds[r.Pair.Round].Attempt)
		}
	}
	if len(rep.Runs) != 12+6+2 {
		t.Errorf("%d runs, want 20", len(rep.Runs))
	}
	s := rep.Fleet.Suspects
	if len(s) != 1 || s[0].Kind != fleet.SuspectLink || s[0].Name != "h0 <-> h1" || !strings.Contains(strings.Join(s[0].Evidence, "\n"), "in all 3 runs") {
		t.Errorf("suspects %+v, want the link h0 <-> h1 alone, failed in all 3 runs", s)
	}
	// A link suspect has its two ends examined, each once.
	slices.Sort(f.doctored)
	if got := fmt.Sprint(f.doctored); got != "[0/ 1/]" {
		t.Errorf("doctor asked of %s, want [0/ 1/]", got)
	}
	if len(rep.Doctor) != 2 || rep.Doctor[0].Host != "h0" || rep.Doctor[1].Host != "h1" || len(rep.Doctor[1].Findings) != 1 ||
		rep.Doctor[1].Findings[0].Found != "powersave on host 1" {
		t.Errorf("doctor ends %+v, want h0's and h1's findings", rep.Doctor)
	}
	if ExitStatus(rep) != 1 {
		t.Errorf("exit %d, want 1", ExitStatus(rep))
	}
}

// TestExecuteFleetInterrupted: cancelling ends the running tests, skips
// every run not finished, runs no later round and no confirmation, and
// exits 5.
func TestExecuteFleetInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answer := func(ctx context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		if c.Measure == rdma.MeasureBandwidth && c.A == 0 {
			cancel()
			<-ctx.Done()
			return nil, fmt.Errorf("rdma: run stopped: %w", ctx.Err())
		}
		return measuredAs(spec, 500, 8), nil // fails: confirmation would follow
	}
	sc := fleetScenario(t, 4, func(fl *Fleet) { fl.Confirm = 1 })
	f := &fakeRelay{answer: answer}
	rep := runFleet(t, ctx, sc, f)
	if rep.StopReason != report.StopInterrupted || !strings.HasPrefix(rep.Stopped, "interrupted") || ExitStatus(rep) != 5 {
		t.Errorf("stop reason %q (%q), exit %d; want interrupted and 5", rep.StopReason, rep.Stopped, ExitStatus(rep))
	}
	if len(rep.Fleet.Rounds) != 3 || !rep.Fleet.Rounds[1].Started.IsZero() || !rep.Fleet.Rounds[2].Started.IsZero() {
		t.Errorf("rounds %+v; want the 3 of the schedule, the last two never started", rep.Fleet.Rounds)
	}
	if len(rep.Runs) != 12 || rep.Summary.Skipped < 8 {
		t.Errorf("%d runs, summary %+v; want 12 with the last two rounds' 8 skipped", len(rep.Runs), rep.Summary)
	}
	for _, r := range rep.Runs {
		if r.Pair.Round > 0 && (r.Status != report.Skipped || !r.Started.IsZero()) {
			t.Errorf("%s run %d in round %d: %s", pairOf(r), r.Index, r.Pair.Round, r.Status)
		}
	}
	if len(f.calls) > 4 {
		t.Errorf("%d tests asked for after the interrupt in round 0's 4", len(f.calls))
	}
}

// TestExecuteFleetExitStatus: 4 only when no pair could run at all; a
// lagging pair that fails no threshold still exits 1, as a suspect.
func TestExecuteFleetExitStatus(t *testing.T) {
	unreachable := func(context.Context, relayCall, rdma.Test) (*rdma.Result, error) {
		return nil, &peer.Error{Addr: "h:1", Stage: peer.StageHandshake, Err: errors.New("token refused")}
	}
	lagging := func(_ context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		if c.A == 1 && c.B == 3 {
			return measuredAs(spec, 50, 8), nil // 5x the median p50, p99 60us: under the threshold
		}
		return measuredAs(spec, 10, 8), nil
	}
	broken := func(_ context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		if c.A == 0 && c.B == 3 && c.Measure == rdma.MeasureBandwidth {
			return nil, &rdma.StallError{Device: "rxe0"}
		}
		return measuredAs(spec, 10, 8), nil
	}
	for _, tc := range []struct {
		name   string
		answer func(context.Context, relayCall, rdma.Test) (*rdma.Result, error)
		exit   int
		reason report.StopReason
	}{
		{"healthy", nil, 0, ""},
		{"no host answers", unreachable, 4, report.StopEnvironment},
		{"a pair lags", lagging, 1, ""},
		{"a run errors", broken, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := runFleet(t, context.Background(), fleetScenario(t, 4, nil), &fakeRelay{answer: tc.answer})
			if got := ExitStatus(rep); got != tc.exit || rep.StopReason != tc.reason {
				t.Errorf("exit %d, stop reason %q; want %d, %q (summary %+v, suspects %+v)", got, rep.StopReason, tc.exit, tc.reason, rep.Summary, rep.Fleet.Suspects)
			}
			if tc.reason == report.StopEnvironment && !strings.Contains(rep.Stopped, "no pair could run") {
				t.Errorf("stopped %q", rep.Stopped)
			}
		})
	}
}

// TestExecuteFleetRelayConfig: each test goes to A's serve with the
// fleet's token, A's device and the scenario's GID index, against B's
// serve and device.
func TestExecuteFleetRelayConfig(t *testing.T) {
	sc := fleetScenario(t, 2, func(fl *Fleet) {
		fl.Hosts[0].Devices = []string{"mlx5_0"}
		fl.Hosts[1].Devices = []string{"mlx5_1"}
	})
	sc.GIDIndex = 3
	var got []string
	var mu sync.Mutex
	via := RelayFunc(func(_ context.Context, a peer.ClientConfig, b peer.Remote, spec rdma.Test) (*peer.Relayed, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s %s gid %d step %v -> %s %s gid %d", a.Addr, a.Token, a.PeerDevice, *a.PeerGIDIndex, a.StepTimeout, b.Addr, b.Device, *b.GIDIndex))
		return &peer.Relayed{Result: measuredAs(spec, 10, 8)}, nil
	})
	rep, err := ExecuteFleet(context.Background(), sc, Relay{Token: "secret", StepTimeout: time.Second, Via: via}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "10.9.0.1:18520 secret mlx5_0 gid 3 step 1s -> 10.9.0.2:18520 mlx5_1 gid 3"
	if len(got) != 2 || got[0] != want || got[1] != want || rep.Summary.Passed != 2 {
		t.Errorf("tests %q, summary %+v; want twice %q", got, rep.Summary, want)
	}
}

// TestExecuteFleetAbortOnFail: abort_on_fail stops only the failing pair.
func TestExecuteFleetAbortOnFail(t *testing.T) {
	sc := fleetScenario(t, 4, nil)
	for i := range sc.runs {
		sc.runs[i].AbortOnFail = true
	}
	answer := func(_ context.Context, c relayCall, spec rdma.Test) (*rdma.Result, error) {
		if c.A == 0 && c.B == 1 {
			return measuredAs(spec, 500, 8), nil
		}
		return measuredAs(spec, 10, 8), nil
	}
	rep := runFleet(t, context.Background(), sc, &fakeRelay{answer: answer})
	for _, r := range rep.Runs {
		want := report.Passed
		if pairOf(r) == "h0->h1" {
			want = []report.Status{report.Failed, report.Skipped}[r.Index]
		}
		if r.Status != want {
			t.Errorf("%s run %d: %s (%s), want %s", pairOf(r), r.Index, r.Status, r.Error, want)
		}
	}
	if rep.StopReason != "" || ExitStatus(rep) != 1 {
		t.Errorf("stop reason %q, exit %d", rep.StopReason, ExitStatus(rep))
	}
}

// TestExecuteFleetRefuses: a scenario goes to the executor of its kind,
// and an inconsistent Fleet is an error, not a panic.
func TestExecuteFleetRefuses(t *testing.T) {
	sc := fleetScenario(t, 3, nil)
	if _, err := Execute(context.Background(), sc, &fakeTarget{}, Options{}); !errors.Is(err, errNotOnePair) {
		t.Errorf("Execute on a fleet: %v", err)
	}
	one := load(t, false)
	if _, err := ExecuteFleet(context.Background(), one, Relay{}, Options{}); err == nil || !strings.Contains(err.Error(), "names no hosts") {
		t.Errorf("ExecuteFleet on one pair: %v", err)
	}
	for name, edit := range map[string]func(*Fleet){
		"no rounds":    func(fl *Fleet) { fl.Rounds = nil },
		"unknown host": func(fl *Fleet) { fl.Rounds[0].Pairs[0].B.Host = 7 },
		"lag factor 1": func(fl *Fleet) { fl.LagFactor = 1 },
		"duplicate":    func(fl *Fleet) { fl.Hosts[1] = fl.Hosts[0] },
	} {
		sc := fleetScenario(t, 3, nil)
		edit(sc.Fleet)
		if _, err := ExecuteFleet(context.Background(), sc, Relay{Via: &fakeRelay{}}, Options{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
