package fleet

import (
	"errors"
	"fmt"
	"strings"
)

// NIC is one RDMA device of one host: Host indexes the host list, Device
// is empty for the serve's default device.
type NIC struct {
	Host   int    `json:"host"`
	Device string `json:"device,omitempty"`
}

// Pair is one test: A initiates (the coordinator asks A's serve to run
// the test against B's serve), so for bandwidth A -> B is a different
// measurement from B -> A.
type Pair struct {
	A NIC `json:"a"`
	B NIC `json:"b"`
}

// Pattern names which pairs of a fleet are tested.
type Pattern string

// The patterns. Each one's Pairs method documents what it yields.
const (
	AllPairs      Pattern = "all-pairs"
	Ring          Pattern = "ring"
	ExplicitPairs Pattern = "pairs"
	Rail          Pattern = "rail"
	Incast        Pattern = "incast"
)

// Patterns lists every pattern, in the order errors name them.
var Patterns = []Pattern{AllPairs, Ring, ExplicitPairs, Rail, Incast}

// PatternOptions are the settings some patterns take.
type PatternOptions struct {
	// BothDirections adds B -> A beside A -> B (all-pairs and rail).
	BothDirections bool
	// Pairs are the host names of pattern "pairs", initiator first.
	Pairs [][2]string
}

// Pairs expands the pattern over hosts (already checked by CheckHosts):
//
//   - all-pairs: every unordered pair of hosts once, lower index
//     initiating, plus the reverse with BothDirections.
//   - ring: host i -> host i+1, the last back to the first; two hosts
//     make one pair.
//   - pairs: opt.Pairs, by host name.
//   - rail: all-pairs within each rail, where rail i is Devices[i] of
//     every host; every host must list the same number of devices.
//   - incast: for each host in turn as receiver, every other host -> it.
//
// Patterns other than rail test each host's first listed device (or its
// default device when it lists none). A pattern that yields no pair is an
// error.
func (p Pattern) Pairs(hosts []Host, opt PatternOptions) ([]Pair, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if len(hosts) < 2 && p != ExplicitPairs {
		return nil, fmt.Errorf("pattern %s needs at least 2 hosts, got %d; add hosts or test one host's devices with a single-pair scenario", p, len(hosts))
	}
	var pairs []Pair
	switch p {
	case AllPairs:
		pairs = completePairs(hosts, firstNIC, opt.BothDirections)
	case Ring:
		n := len(hosts)
		for i := range hosts {
			if n == 2 && i == 1 {
				break // 1 -> 0 would repeat 0 -> 1's path
			}
			pairs = append(pairs, Pair{firstNIC(hosts, i), firstNIC(hosts, (i+1)%n)})
		}
	case ExplicitPairs:
		var err error
		if pairs, err = namedPairs(hosts, opt.Pairs); err != nil {
			return nil, err
		}
	case Rail:
		if err := sameDeviceCount(hosts); err != nil {
			return nil, err
		}
		for rail := range hosts[0].Devices {
			pairs = append(pairs, completePairs(hosts, func(hosts []Host, i int) NIC {
				return NIC{i, hosts[i].Devices[rail]}
			}, opt.BothDirections)...)
		}
	case Incast:
		for recv := range hosts {
			for send := range hosts {
				if send != recv {
					pairs = append(pairs, Pair{firstNIC(hosts, send), firstNIC(hosts, recv)})
				}
			}
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("pattern %s yields no pair over %d hosts; list pairs or choose another pattern", p, len(hosts))
	}
	return pairs, nil
}

func (p Pattern) check() error {
	for _, known := range Patterns {
		if p == known {
			return nil
		}
	}
	names := make([]string, len(Patterns))
	for i, k := range Patterns {
		names[i] = string(k)
	}
	return fmt.Errorf("unknown pattern %q; one of %s", string(p), strings.Join(names, ", "))
}

func firstNIC(hosts []Host, i int) NIC {
	if len(hosts[i].Devices) == 0 {
		return NIC{Host: i}
	}
	return NIC{i, hosts[i].Devices[0]}
}

func completePairs(hosts []Host, nic func([]Host, int) NIC, both bool) []Pair {
	n := len(hosts)
	dirs := 1
	if both {
		dirs = 2
	}
	pairs := make([]Pair, 0, n*(n-1)/2*dirs) // growing by doubling peaks near twice this
	for i := range hosts {
		for j := i + 1; j < len(hosts); j++ {
			pairs = append(pairs, Pair{nic(hosts, i), nic(hosts, j)})
			if both {
				pairs = append(pairs, Pair{nic(hosts, j), nic(hosts, i)})
			}
		}
	}
	return pairs
}

func namedPairs(hosts []Host, names [][2]string) ([]Pair, error) {
	if len(names) == 0 {
		return nil, errors.New("pattern pairs has no pairs; list them as [initiator, responder] host names")
	}
	index := map[string]int{}
	for i, h := range hosts {
		index[h.Name] = i
	}
	seen := map[[2]string]int{}
	pairs := make([]Pair, 0, len(names))
	for k, n := range names {
		var ends [2]int
		for e, name := range n {
			i, ok := index[name]
			if !ok {
				return nil, fmt.Errorf("pair %d: host %q is not in the host list; use one of its names", k+1, name)
			}
			ends[e] = i
		}
		if ends[0] == ends[1] {
			return nil, fmt.Errorf("pair %d: %s with itself; a pair needs two hosts", k+1, n[0])
		}
		if first, dup := seen[n]; dup {
			return nil, fmt.Errorf("pairs %d and %d are both %s -> %s; list each pair once", first+1, k+1, n[0], n[1])
		}
		seen[n] = k
		pairs = append(pairs, Pair{firstNIC(hosts, ends[0]), firstNIC(hosts, ends[1])})
	}
	return pairs, nil
}

func sameDeviceCount(hosts []Host) error {
	want := len(hosts[0].Devices)
	var odd []string
	for _, h := range hosts[1:] {
		if len(h.Devices) != want {
			odd = append(odd, fmt.Sprintf("%s has %d", h.Name, len(h.Devices)))
		}
	}
	if want == 0 && len(odd) == 0 {
		return fmt.Errorf("pattern rail needs devices on every host; list them, e.g. devices=mlx5_0,mlx5_1")
	}
	if len(odd) > 0 {
		return fmt.Errorf("pattern rail needs the same number of devices on every host: %s has %d, %s; list the same count on each", hosts[0].Name, want, strings.Join(odd, ", "))
	}
	return nil
}
