package report

import (
	"time"

	"github.com/rdmarun/rdmarun/fleet"
)

// Fleet is a fleet run's plan and verdict: the hosts, the rounds as they
// ran, one matrix per metric and the ranked suspects. Report.Runs then
// holds every pair's runs, each with its PairRun.
type Fleet struct {
	Source    string        `json:"source"` // where the hosts came from: "list", "dns NAME", ...
	Hosts     []fleet.Host  `json:"hosts"`
	Pattern   fleet.Pattern `json:"pattern"`
	Parallel  int           `json:"parallel,omitempty"`
	Confirm   int           `json:"confirm,omitempty"`
	LagFactor float64       `json:"lag_factor"`
	Rounds    []Round       `json:"rounds"`
	// Matrices hold one metric each over every host pair. A latency
	// metric's values are seconds (HigherIsBetter false); a bandwidth
	// metric's are bytes per second (HigherIsBetter true).
	Matrices []fleet.Matrix  `json:"matrices"`
	Suspects []fleet.Suspect `json:"suspects"`
	// Setup lists the hosts whose own set-up failed their tests (the
	// locked-memory limit, no device, an op the device cannot do):
	// findings about those hosts, which judge no pair and blame no one.
	Setup []SetupFinding `json:"setup,omitempty"`
	// GroupBy is the host label (see fleet.Host.Labels) a large fleet's
	// outputs group hosts by; empty: blocks of GroupBlockHosts hosts in
	// list order (see GroupHosts).
	GroupBy string `json:"group_by,omitempty"`
	// Groups names each host's group, Groups[i] being Hosts[i]'s, for a
	// fleet above LargeFleetHosts: the one grouping that the HTML, JUnit
	// and text writers and later tools all read. Empty at or below
	// LargeFleetHosts, whose outputs draw every pair.
	Groups []string `json:"groups,omitempty"`
}

// SetupFinding is one host whose own set-up failed.
type SetupFinding struct {
	Host  string `json:"host"`
	Runs  int    `json:"runs"`  // runs that could not run because of it
	Error string `json:"error"` // the first run's error
}

// Round is one round as it ran: its pairs ran at the same time, and no
// pair of the next round started before Finished.
type Round struct {
	Index int             `json:"index"` // from 0, in the order run
	Kind  fleet.RoundKind `json:"kind"`
	// Attempt is 0 for the pattern's schedule and k for the k-th
	// confirmation of the pairs that were bad.
	Attempt  int          `json:"attempt"`
	Pairs    []fleet.Pair `json:"pairs"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
}

// PairRun places a run of a fleet scenario: which pair, in which round.
type PairRun struct {
	A     string     `json:"a"` // the initiator: host name, or host/device in rail mode
	B     string     `json:"b"`
	Pair  fleet.Pair `json:"pair"`
	Round int        `json:"round"` // index into Fleet.Rounds
	// Attempt is 0 for the schedule's run, k for the k-th confirmation.
	Attempt int `json:"attempt"`
}
