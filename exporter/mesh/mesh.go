package mesh

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// Epoch is the rotation period t falls in: unix time / rotate. Every node
// computes the same one from its clock; nodes whose clocks differ by d
// disagree on the ring for d around each boundary, which the rotate of at
// least a minute keeps small.
func Epoch(t time.Time, rotate time.Duration) uint64 {
	n := t.UnixNano()
	if rotate <= 0 || n < 0 {
		return 0
	}
	return uint64(n) / uint64(rotate)
}

// Next is when the selection may change next: the start of epoch+1.
func Next(epoch uint64, rotate time.Duration) time.Time {
	if rotate <= 0 {
		return time.Unix(0, math.MaxInt64)
	}
	return time.Unix(0, int64((epoch+1)*uint64(rotate)))
}

// Self says how this node recognises itself among the discovered targets.
type Self struct {
	Name    string // the mesh source name
	Address string // the responder's host:port as peers dial it; "" when unknown
	// Local reports whether a host:port is this node's responder when it
	// listens on every address (host is one of this node's IPs and port is
	// the responder's). nil: not used.
	Local  func(hostport string) bool
	Labels map[string]string
}

// is reports whether t is this node.
func (s Self) is(t config.Target) bool {
	return t.Name == s.Name ||
		(s.Address != "" && t.Address == s.Address) ||
		(s.Local != nil && s.Local(t.Address))
}

// Selection is what one node probes in one epoch.
type Selection struct {
	Epoch uint64
	// SelfName is the name self has on the ring: the matching target's
	// name, else Self.Name. Peers place this node by the name they see.
	SelfName string
	Known    int             // targets discovered, self included if it was listed
	Targets  []config.Target // chosen, sorted by name, never self
}

// Choose picks this node's targets from all discovered targets. A target is
// self when its Name equals self.Name, or its Address equals self.Address,
// or self.Local(Address) is true.
//
// Mesh off (MaxTargets 0): every target except self. Else the ring of every
// target's name, plus self's name if self is not listed, and the next
// MaxTargets after self; then every target matching an Always selector
// (against self.Labels and the target's Labels) is added.
//
// It keeps K candidates in a heap instead of sorting the ring, so a call
// costs O(N log K) and allocates O(K), not O(N).
func Choose(cfg config.Mesh, self Self, all []config.Target, epoch uint64) Selection {
	sel := Selection{Epoch: epoch, SelfName: self.Name, Known: len(all)}
	// Self is found first: its name on the ring decides every rank. The
	// indices ascend, which the skip below relies on.
	var selves []int
	for i, t := range all {
		if self.is(t) {
			selves = append(selves, i)
		}
	}
	sel.SelfName = selfName(self.Name, all, selves)

	var chosen []int32
	if !cfg.Enabled() {
		chosen = make([]int32, 0, len(all)-len(selves))
		forOthers(all, selves, func(i int) { chosen = append(chosen, int32(i)) })
	} else {
		succ := successors{self: sel.SelfName, selfHash: ringHash(sel.SelfName, epoch), all: all}
		succ.heap = make([]rank, 0, min(cfg.MaxTargets, len(all)))
		forOthers(all, selves, func(i int) { succ.offer(i, epoch) })
		chosen = make([]int32, len(succ.heap), len(succ.heap)+8)
		for j, r := range succ.heap {
			chosen[j] = r.idx
		}
		if sels := resolve(cfg.Always, self.Labels); len(sels) > 0 {
			forOthers(all, selves, func(i int) {
				if matchesAny(sels, all[i].Labels) {
					chosen = append(chosen, int32(i))
				}
			})
		}
	}
	sortTargets(chosen, all)
	sel.Targets = make([]config.Target, 0, len(chosen))
	for j, i := range chosen {
		if j > 0 && chosen[j-1] == i {
			continue // in the sample and kept by a selector too
		}
		sel.Targets = append(sel.Targets, all[i])
	}
	return sel
}

// selfName is the name this node has on everyone's ring. When several
// targets are self (a name and an address from different sources), the one
// of self's own name wins, else the least name, so that the choice does not
// depend on the order of the list.
func selfName(name string, all []config.Target, selves []int) string {
	best := ""
	for _, i := range selves {
		switch n := all[i].Name; {
		case n == name:
			return name
		case best == "" || n < best:
			best = n
		}
	}
	if best == "" {
		return name
	}
	return best
}

// forOthers calls f with the index of every target that is not self.
func forOthers(all []config.Target, selves []int, f func(int)) {
	next := 0
	for i := range all {
		if next < len(selves) && selves[next] == i {
			next++
			continue
		}
		f(i)
	}
}

// sortTargets orders chosen by target name, then address so that two
// targets of one name (which discovery does not produce) still sort the
// same whatever the input order; equal indices end up adjacent.
func sortTargets(chosen []int32, all []config.Target) {
	slices.SortFunc(chosen, func(a, b int32) int { return compareTargets(all, a, b) })
}

func compareTargets(all []config.Target, a, b int32) int {
	ta, tb := &all[a], &all[b]
	if c := strings.Compare(ta.Name, tb.Name); c != 0 {
		return c
	}
	if c := strings.Compare(ta.Address, tb.Address); c != 0 {
		return c
	}
	return int(a) - int(b)
}

// selector is a MeshSelector resolved against this node's labels: the
// label values a peer must carry, all of them.
type selector []struct{ name, value string }

// resolve turns the selectors into the values a peer must carry, once per
// Choose rather than once per target. A selector on a label this node lacks
// keeps nobody: a node without a rack has no rack to share.
func resolve(always []config.MeshSelector, own map[string]string) []selector {
	out := make([]selector, 0, len(always))
next:
	for _, s := range always {
		var sel selector
		for _, n := range s.Same {
			v := own[n]
			if v == "" {
				continue next
			}
			sel = append(sel, struct{ name, value string }{n, v})
		}
		for n, v := range s.Match {
			sel = append(sel, struct{ name, value string }{n, v})
		}
		if len(sel) > 0 { // config refuses empty selectors; keep everyone is never meant
			out = append(out, sel)
		}
	}
	return out
}

// matchesAny reports whether a peer with labels peer is kept by one of the
// selectors.
func matchesAny(sels []selector, peer config.Labels) bool {
next:
	for _, sel := range sels {
		for _, l := range sel {
			if peer.Get(l.name) != l.value {
				continue next
			}
		}
		return true
	}
	return false
}
