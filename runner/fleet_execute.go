package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// Relayer runs one test of a fleet: the serve at a.Addr (host A) runs
// spec against the serve at b.Addr (host B) and returns both sides'
// result with A's port rate. peer.RunVia is the real one; tests give
// their own.
type Relayer interface {
	RunVia(ctx context.Context, a peer.ClientConfig, b peer.Remote, spec rdma.Test) (*peer.Relayed, error)
}

// RelayFunc makes a function a Relayer: RelayFunc(peer.RunVia).
type RelayFunc func(ctx context.Context, a peer.ClientConfig, b peer.Remote, spec rdma.Test) (*peer.Relayed, error)

// RunVia implements Relayer.
func (f RelayFunc) RunVia(ctx context.Context, a peer.ClientConfig, b peer.Remote, spec rdma.Test) (*peer.Relayed, error) {
	return f(ctx, a, b, spec)
}

// Relay is how the coordinator reaches a fleet: one token and one TLS
// setting for every host's serve, as one fleet shares them.
type Relay struct {
	Token string
	TLS   *tls.Config
	// StepTimeout bounds each control step on the hop to A (0: the
	// peer package's 10 s); RunVia bounds the wait for A's answer by the
	// test's own length or A's limit on one test.
	StepTimeout time.Duration
	// Via runs each test; nil means peer.RunVia.
	Via Relayer
	// Doctor asks a host for its doctor's findings when the run names
	// suspects; nil means peer.Doctor.
	Doctor DoctorFunc
	// Devices asks a host for its devices, for devices: auto
	// (ResolveDevices); nil means peer.Devices.
	Devices DevicesFunc
}

var errNotOnePair = errors.New("runner: the scenario names hosts:, a fleet; run it with ExecuteFleet")

// ExecuteFleet runs every expanded run of sc on every pair of sc.Fleet
// and judges it, then names the suspects. The rounds run in order; the
// pairs of a round run at once, a goroutine each, every pair running all
// of sc.Runs() in order through host A's serve against host B's; the next
// round starts when the last pair of this one is done. At most
// Fleet.Parallel pairs (DefaultParallel when 0) run at once, whatever
// the rounds hold, save an incast round's senders, which run together.
//
// Thresholds are judged per run as Execute judges them, link_gbps being
// the rate of host A's port as A read it (the coordinator runs no RDMA).
// A that could not read it, or is of a release that does not send it,
// leaves it 0, so a threshold on it fails rather than passing by
// accident.
//
// A host that cannot be reached, or refuses the coordinator or A (an
// error matching peer.ErrUnreachable), fails that pair's remaining runs
// as errors whose message starts "environment", never the whole fleet
// run. A failing case with abort_on_fail skips its pair's remaining runs.
// When ctx ends (Ctrl-C) every run not finished is skipped, as Execute
// does. When the run names suspects, the doctor's findings on their
// hosts (up to maxDoctorEnds) are attached, as Execute attaches both
// ends' when a threshold fails.
//
// Then confirmation: up to Fleet.Confirm times, the pairs still bad (see
// fleet.BadPairs: failed, errored or lagging on some metric) run every
// run again in rounds of their own (Attempt k), scheduled as the pattern
// schedules; a pair whose repeat passes is taken as flaky and not run
// again. Every run becomes fleet outcomes (see fleetOutcomes), from
// which report.Fleet gets its matrices and suspects.
//
// ExecuteFleet itself fails only when sc is not a fleet, has no runs, or
// its Fleet is inconsistent (no rounds, a pair naming an unknown host, a
// lag factor not above 1).
func ExecuteFleet(ctx context.Context, sc *Scenario, relay Relay, opt Options) (*report.Report, error) {
	fl := sc.Fleet
	if fl == nil {
		return nil, errors.New("runner: the scenario names no hosts:; run it with Execute")
	}
	runs := sc.Runs()
	if len(runs) == 0 {
		return nil, ErrNoRuns
	}
	if fl.AutoDevices && len(fl.Rounds) == 0 {
		return nil, errors.New("runner: fleet: devices: auto, and the hosts' devices are not known yet; call ResolveDevices first")
	}
	if err := checkPlan(fl); err != nil {
		return nil, err
	}
	if err := checkResume(runs, opt.Resume, fl); err != nil {
		return nil, err
	}
	c := &coordinator{
		fleet: fl, runs: runs, repeatGap: sc.RepeatGap, opt: opt, via: relay.Via,
		names: metricNames(runs),
		rep: &report.Report{
			Schema: report.Schema, Tool: opt.Tool, Scenario: sc.Name, File: opt.File,
			Peer: describeFleet(fl), Started: time.Now(),
			Fleet: &report.Fleet{
				Source: fl.Source.String(), Hosts: fl.Hosts, Pattern: fl.Pattern,
				Parallel: fl.Parallel, Confirm: fl.Confirm, LagFactor: fl.LagFactor,
			},
		},
		a:       peer.ClientConfig{Token: relay.Token, TLS: relay.TLS, StepTimeout: relay.StepTimeout},
		resumed: resumedByPair(opt.Resume),
	}
	if c.via == nil {
		c.via = RelayFunc(peer.RunVia)
	}
	if c.rep.Fleet.LagFactor == 0 {
		c.rep.Fleet.LagFactor = fleet.DefaultLagFactor
	}
	if sc.GIDIndex != rdma.AutoGIDIndex {
		g := sc.GIDIndex
		c.gid = &g
	}
	c.rail = fl.Pattern == fleet.Rail
	if opt.Begun != nil {
		opt.Begun(c.rep)
	}

	c.runRounds(ctx, fl.Rounds, 0)
	for k := 1; k <= fl.Confirm && ctx.Err() == nil; k++ {
		bad, err := fleet.BadPairs(fl.Hosts, c.outcomes, fl.LagFactor)
		if err != nil {
			return nil, err
		}
		if len(bad) == 0 {
			break
		}
		rounds, err := fl.Pattern.Rounds(bad, fl.Parallel)
		if err != nil {
			return nil, fmt.Errorf("runner: scheduling the confirmation of %d pairs: %w", len(bad), err)
		}
		c.runRounds(ctx, rounds, k)
	}

	rep := c.rep
	rep.Fleet.GroupBy, rep.Fleet.Groups = fl.ReportGrouping()
	rep.Finished = time.Now()
	rep.Tally()
	var err error
	if rep.Fleet.Matrices, err = fleet.Matrices(fl.Hosts, c.outcomes, fl.LagFactor); err != nil {
		return nil, err
	}
	if rep.Fleet.Suspects, err = fleet.Suspects(fl.Hosts, c.outcomes, fl.LagFactor); err != nil {
		return nil, err
	}
	for h := range fl.Hosts {
		if f := c.setup[h]; f != nil {
			rep.Fleet.Setup = append(rep.Fleet.Setup, *f)
		}
	}
	ask := relay.Doctor
	if ask == nil {
		ask = peer.Doctor
	}
	diagnoseFleet(ctx, rep, fl.Hosts, rep.Fleet.Suspects, c.a, ask)
	switch {
	case c.interrupted:
		rep.Stopped = "interrupted (" + ctx.Err().Error() + ")"
		rep.StopReason = report.StopInterrupted
	case c.measured == 0 && c.firstEnv != "":
		rep.Stopped = "environment unusable: no pair could run; the first error: " + c.firstEnv
		rep.StopReason = report.StopEnvironment
	}
	return rep, nil
}

// checkPlan holds a Fleet built outside the loader to what the loader
// guarantees, so a bad one is an error rather than an index panic.
func checkPlan(fl *Fleet) error {
	if err := fleet.CheckHosts(fl.Hosts); err != nil {
		return fmt.Errorf("runner: fleet: %w", err)
	}
	if len(fl.Rounds) == 0 {
		return errors.New("runner: fleet: no rounds; set Pairs and Rounds with fleet.Pattern.Pairs and Rounds")
	}
	if fl.Confirm < 0 || fl.Parallel < 0 {
		return fmt.Errorf("runner: fleet: confirm %d and parallel %d must not be negative", fl.Confirm, fl.Parallel)
	}
	for r, round := range fl.Rounds {
		if len(round.Pairs) == 0 {
			return fmt.Errorf("runner: fleet: round %d has no pairs", r)
		}
		for _, p := range round.Pairs {
			for _, n := range []fleet.NIC{p.A, p.B} {
				if n.Host < 0 || n.Host >= len(fl.Hosts) {
					return fmt.Errorf("runner: fleet: round %d names host %d of %d", r, n.Host, len(fl.Hosts))
				}
			}
		}
	}
	// The lag factor is checked where it is used; no outcomes yet.
	if _, err := fleet.BadPairs(fl.Hosts, nil, fl.LagFactor); err != nil {
		return fmt.Errorf("runner: fleet: %w", err)
	}
	return nil
}

func describeFleet(fl *Fleet) string {
	return fmt.Sprintf("%d hosts (%s), %s", len(fl.Hosts), fl.Source, fl.Pattern)
}

// coordinator is one fleet run in progress.
type coordinator struct {
	fleet *Fleet
	runs  []Run
	// repeatGap is the scenario's pause between passes, taken by every pair.
	repeatGap time.Duration
	names     []metricName // per run
	opt       Options
	via       Relayer
	a         peer.ClientConfig // token, TLS and step of every hop to A
	gid       *int              // both ends' GID index; nil: each serve's own
	rail      bool

	rep         *report.Report
	outcomes    []fleet.Outcome
	interrupted bool
	measured    int    // runs that reached a test outcome (not env, not skipped)
	firstEnv    string // the first environment error, for a fleet that could not run at all
	setup       map[int]*report.SetupFinding
	resumed     map[pairAttempt]map[int]report.Run // Options.Resume's, of the pairs done

	mu          sync.Mutex // held for progress calls
	done, total int
}

// pairResult is one run of one pair, with what the report cannot say.
type pairResult struct {
	run report.Run
	env bool // an environment error: a host did not answer, or its set-up failed
	// setupHost is the host whose own set-up failed (the locked-memory
	// limit, no device), or -1.
	setupHost int
}

// setupHost is the host of p whose own set-up err reports, or -1: A for
// its own failure, B for one B reported to A.
func setupHost(p fleet.Pair, err error) int {
	var re *peer.RelayedError
	if errors.As(err, &re) {
		switch re.Setup {
		case peer.SetupRelay:
			return p.A.Host
		case peer.SetupPeer:
			return p.B.Host
		}
	}
	return -1
}

// runRounds runs the rounds in order, each one's pairs at once, at most
// Fleet.atOnce at a time (roundAtOnce), and records rounds, runs and
// outcomes. A round that ctx ended before it started is recorded with
// zero times, its runs skipped.
func (c *coordinator) runRounds(ctx context.Context, rounds []fleet.Round, attempt int) {
	c.mu.Lock()
	for _, r := range rounds {
		c.total += len(r.Pairs) * len(c.runs)
		c.done += c.keptRuns(r.Pairs, attempt)
	}
	c.mu.Unlock()
	for _, round := range rounds {
		rr := report.Round{Index: len(c.rep.Fleet.Rounds), Kind: round.Kind, Attempt: attempt, Pairs: round.Pairs}
		results := make([][]pairResult, len(round.Pairs))
		if ctx.Err() == nil {
			rr.Started = time.Now()
			// A slot is taken before the goroutine starts, so pairs
			// waiting for one hold no goroutine either.
			slots := make(chan struct{}, roundAtOnce(round, c.fleet.atOnce()))
			var wg sync.WaitGroup
			for i, p := range round.Pairs {
				slots <- struct{}{}
				wg.Go(func() {
					defer func() { <-slots }()
					results[i] = c.runPair(ctx, p, rr.Index, attempt)
				})
			}
			wg.Wait()
			rr.Finished = time.Now()
		} else {
			for i, p := range round.Pairs {
				results[i] = c.runPair(ctx, p, rr.Index, attempt)
			}
		}
		c.rep.Fleet.Rounds = append(c.rep.Fleet.Rounds, rr)
		for i, p := range round.Pairs {
			for j, res := range results[i] {
				c.rep.Runs = append(c.rep.Runs, res.run)
				c.record(p, j, res)
			}
		}
	}
}

// runPair runs every run of the scenario on one pair, in order.
func (c *coordinator) runPair(ctx context.Context, p fleet.Pair, round, attempt int) []pairResult {
	hosts := c.fleet.Hosts
	a := c.a
	a.Addr, a.PeerDevice, a.PeerGIDIndex = hosts[p.A.Host].DialAddr(), p.A.Device, c.gid
	b := peer.Remote{Addr: hosts[p.B.Host].DialAddr(), Device: p.B.Device, GIDIndex: c.gid}
	where := &report.PairRun{A: c.nicName(p.A), B: c.nicName(p.B), Pair: p, Round: round, Attempt: attempt}

	if out := c.resumePair(p, attempt, where); out != nil {
		return out
	}
	out := make([]pairResult, 0, len(c.runs))
	var envErr, aborted string
	envHost := -1
	for i, r := range c.runs {
		if i > 0 && r.Repeat != c.runs[i-1].Repeat && envErr == "" && aborted == "" {
			passGap(ctx, c.repeatGap)
		}
		res := pairResult{run: report.Run{Case: r.Case, Index: r.Index, Repeat: r.Repeat, Spec: r.Spec, Pair: where}, setupHost: -1}
		run := &res.run
		switch {
		case ctx.Err() != nil:
			run.Status = report.Skipped
		case envErr != "":
			// Every later run of the pair would fail the same way, each
			// after a step's wait for a host that does not answer.
			run.Status, run.Error, res.env, res.setupHost = report.Errored, "environment, not run: "+envErr, true, envHost
			c.progress(run)
		case aborted != "":
			run.Status, run.Error = report.Skipped, aborted
		default:
			run.Started = time.Now()
			relayed, err := c.via.RunVia(ctx, a, b, r.Spec)
			run.Seconds = time.Since(run.Started).Seconds()
			var result *rdma.Result
			var link float64
			if err == nil {
				result, link = relayed.Result, relayed.LinkGbps
			}
			e := settle(ctx, run, r, result, err, link)
			if e == endEnvironment {
				envErr = err.Error()
				run.Error, res.env = "environment: "+envErr, true
				res.setupHost = setupHost(p, err)
				envHost = res.setupHost
			}
			if aborts(r, run, e) {
				aborted = abortedOnPair(r, run.Status)
			}
			c.progress(run)
		}
		out = append(out, res)
	}
	return out
}

// abortedOnPair is the error of a pair's runs that abort_on_fail skips
// after run r ended with status: one text whether the pair ran now or is
// taken from a resumed run's file.
func abortedOnPair(r Run, status report.Status) string {
	return fmt.Sprintf("not run: case %s has abort_on_fail and run %d %s on this pair", r.Case, r.Index, status)
}

func (c *coordinator) progress(run *report.Run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done++
	if c.opt.Progress != nil {
		c.opt.Progress(c.done, c.total, run)
	}
}

// record turns a finished run into outcomes and keeps the tallies the
// stop reason is decided from.
func (c *coordinator) record(p fleet.Pair, i int, res pairResult) {
	switch {
	case res.run.Status == report.Skipped:
		if res.run.Error == "interrupted" || res.run.Error == "" {
			c.interrupted = true
		}
		return
	case res.env:
		if c.firstEnv == "" {
			c.firstEnv = res.run.Error
		}
		if res.setupHost >= 0 {
			c.setupFinding(res.setupHost, res.run.Error)
		}
	default:
		c.measured++
	}
	c.outcomes = append(c.outcomes, fleetOutcomes(p, c.names[i], res)...)
}

// setupFinding counts a run host could not run because its own set-up
// failed, keeping the first error.
func (c *coordinator) setupFinding(host int, msg string) {
	if c.setup == nil {
		c.setup = map[int]*report.SetupFinding{}
	}
	f := c.setup[host]
	if f == nil {
		f = &report.SetupFinding{Host: c.fleet.Hosts[host].Name, Error: msg}
		c.setup[host] = f
	}
	f.Runs++
}

// nicName is the host's name, with the device in rail mode, where hosts
// meet on several devices.
func (c *coordinator) nicName(n fleet.NIC) string {
	name := c.fleet.Hosts[n.Host].Name
	if c.rail && n.Device != "" {
		name += "/" + n.Device
	}
	return name
}
