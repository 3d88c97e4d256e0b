package runner

import (
	"slices"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// Scenario is a scenario file, loaded and checked: every run it expands
// to is a test the engine accepts.
type Scenario struct {
	Name        string
	Description string
	File        string // the name it was loaded under, as errors print it

	Device     string // a device name, or "auto"
	Port       int    // 1-based
	GIDIndex   int    // rdma.AutoGIDIndex: choose the RoCE v2 IPv4 GID
	Peer       string // "loopback", or HOST[:PORT] of `rdmarun serve`; "" with Fleet
	PeerDevice string // responder device; "" lets the responder (or loopback) choose
	// TokenFile and the TLS files are as written in the scenario when it
	// came through Parse; Load resolves relative ones against the file's
	// directory, so a scenario can sit beside its secrets.
	TokenFile string          // shared token for a remote peer; "" for none
	TLS       *ctrl.TLSConfig // nil: the control channel is not encrypted

	// Repeat is how many passes over every case's runs the scenario makes
	// (repeat:, default 1).
	Repeat int
	// RepeatGap is the pause between two passes (repeat_gap:, default 0),
	// so that the passes sample a system whose level drifts over seconds
	// rather than one stretch of it.
	RepeatGap time.Duration

	// Baseline is the report of an earlier run that conditions such as
	// not regressed(p99) compare with (baseline:, or --baseline); nil
	// when there is none.
	Baseline *Baseline

	// Vars are the scenario's variables after overrides, as substituted.
	Vars map[string]string

	Cases []Case

	// Fleet is set when the scenario names hosts: instead of a peer: its
	// cases then run on every pair of the fleet's pattern.
	Fleet *Fleet

	runs []Run
}

// IsLoopback reports whether both ends run in this process: never for a
// fleet, whose ends are its hosts.
func (s *Scenario) IsLoopback() bool { return s.Fleet == nil && s.Peer == PeerLoopback }

// PeerLoopback is the peer that puts both ends in this process.
const PeerLoopback = "loopback"

// Case is one entry of cases:, with the defaults folded in.
type Case struct {
	Name        string
	Description string
	Line        int // where the case starts in the file
	// QPsLine and QPsColumn are where its qps were given (in the case
	// or in defaults:), or where the case starts.
	QPsLine, QPsColumn int

	Op       rdma.Op
	Measures []rdma.Measure // latency, bandwidth, or both in that order
	Sizes    []int          // bytes; one 0 when none was given: the engine's default
	QPs      []int
	Modes    []rdma.Mode
	// Spec holds every other setting; Op, Measure, Size, QPs and Mode are
	// filled in per run.
	Spec rdma.TestSpec

	Pass        []*Threshold
	AbortOnFail bool
}

// Run is one test of the expansion: one case at one measure, size, QP
// count and mode.
type Run struct {
	Case  string `json:"case"`
	Index int    `json:"index"` // position in the scenario's expansion, from 0
	// Spec is complete, the engine's defaults filled in, so reports show
	// what ran.
	Spec rdma.Test `json:"spec"`
	// Pass holds the case's conditions this run can judge: a latency run
	// gets those reading latency or neither kind of name, a bandwidth run
	// those reading bandwidth or neither.
	Pass []*Threshold `json:"pass,omitempty"`
	// AbortOnFail stops the scenario when this run fails a condition.
	AbortOnFail bool `json:"abort_on_fail,omitempty"`
	// Repeat is the pass (1..Scenario.Repeat) of a repeated scenario, 0
	// when it has one pass.
	Repeat int `json:"repeat,omitempty"`
}

// Runs returns the scenario's expansion, in file order: per case,
// measure (latency before bandwidth), then size, then QP count, then mode.
// The same file always expands to the same list.
func (s *Scenario) Runs() []Run { return slices.Clone(s.runs) }

// MaxSize is the largest message of any run, which sizes the buffers of
// endpoints kept open across runs.
func (s *Scenario) MaxSize() int {
	m := 0
	for _, r := range s.runs {
		m = max(m, r.Spec.Size)
	}
	return m
}

// refusedRun is a run of a case that the engine refused, and why.
type refusedRun struct {
	spec rdma.Test // defaults filled in, for the message
	err  error
}

// expand lists a case's runs, numbered from first, each completed by the
// engine, and the runs it refused.
func (c *Case) expand(first int) (runs []Run, refused []refusedRun) {
	for _, m := range c.Measures {
		var pass []*Threshold
		for _, t := range c.Pass {
			if k, _ := t.kind(); k == anyRun || k == kindOf(m) {
				pass = append(pass, t)
			}
		}
		for _, size := range c.Sizes {
			for _, qps := range c.QPs {
				for _, mode := range c.Modes {
					spec := c.Spec
					spec.CPUs = slices.Clone(spec.CPUs)
					spec.Op, spec.Measure, spec.Size, spec.QPs, spec.Mode = c.Op, m, size, qps, mode
					test, err := spec.Complete()
					if err != nil {
						refused = append(refused, refusedRun{test, err})
						continue
					}
					runs = append(runs, Run{
						Case:        c.Name,
						Index:       first + len(runs),
						Spec:        test,
						Pass:        pass,
						AbortOnFail: c.AbortOnFail,
					})
				}
			}
		}
	}
	return runs, refused
}

// runCount is how many runs a case expands to, computed without
// expanding so an enormous matrix is refused before it is built.
func (c *Case) runCount() int {
	return len(c.Measures) * len(c.Sizes) * len(c.QPs) * len(c.Modes)
}

func kindOf(m rdma.Measure) metricKind {
	switch m {
	case rdma.MeasureBandwidth:
		return bandwidthRun
	case rdma.MeasureConnect:
		return connectRun
	}
	return latencyRun
}
