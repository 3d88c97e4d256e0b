package runner

import "github.com/rdmarun/rdmarun/fleet"

// Fleet is what a scenario that names hosts: instead of one peer: runs
// on: every case of the scenario runs once per pair of the pattern, in
// the pattern's rounds, each pair driven through host A's rdmarun serve
// against host B's.
type Fleet struct {
	// Source is where the hosts came from, as written.
	Source HostSource
	// Hosts are the fleet, in the order listed or resolved. Parse fills
	// them for a list; Load also reads a hostfile, resolves DNS and
	// expands a Slurm node list.
	Hosts    []fleet.Host
	Pattern  fleet.Pattern
	Options  fleet.PatternOptions
	Parallel int // at most this many pairs at once; 0: rounds unsplit, DefaultParallel at once
	// Confirm re-runs each bad pair this many times before the suspects
	// are named, so that one flaky sample does not blame a node.
	Confirm   int
	LagFactor float64 // 0: fleet.DefaultLagFactor
	// GroupBy is group_by:, the host label a large fleet's outputs group
	// hosts by; "": blocks in list order (see report.GroupHosts).
	GroupBy string

	// AutoDevices is devices: auto: each host that lists no devices of
	// its own tests on those its responder reports ACTIVE, in natural
	// order (mlx5_2 before mlx5_10), asked when the run starts
	// (ResolveDevices), which then plans Pairs and Rounds.
	AutoDevices bool

	// Pairs and Rounds are the pattern over Hosts, set once the hosts are
	// known (with AutoDevices, once their devices are); a pattern that
	// cannot be scheduled is a load error.
	Pairs  []fleet.Pair
	Rounds []fleet.Round
}

// HostSource says where a fleet's hosts come from.
type HostSource struct {
	Kind  HostSourceKind
	Value string // the hostfile's path, the DNS name or the Slurm node list; "" for a list
}

// HostSourceKind is one way of naming a fleet's hosts.
type HostSourceKind string

// The host sources.
const (
	HostsList  HostSourceKind = "list"     // hosts: [node1, node2:18521, ...]
	HostsFile  HostSourceKind = "hostfile" // hosts: {file: PATH}
	HostsDNS   HostSourceKind = "dns"      // hosts: {dns: NAME}: A/AAAA, or SRV for _service._proto names
	HostsSlurm HostSourceKind = "slurm"    // hosts: {slurm: NODELIST}, or the job's SLURM_JOB_NODELIST
)

// String names the source for reports: "list", "hostfile hosts.txt",
// "dns rdmarun.example", "slurm node[1-4]".
func (s HostSource) String() string {
	if s.Value == "" {
		return string(s.Kind)
	}
	return string(s.Kind) + " " + s.Value
}
