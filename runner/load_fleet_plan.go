package runner

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// maxFleetPairs bounds a fleet's pairs: a million is all-pairs over some
// 1400 hosts, whose planning takes a quarter second and 130 MB and whose
// run takes hours; past it a host source listed more than was meant. A variable so
// that fuzzing, which explores shapes rather than sizes, can lower it.
var maxFleetPairs int64 = 1 << 20

// planFleet sets the fleet's hosts, then its pairs and rounds, once the
// hosts are known: at Parse for an inline list, at Load for the others.
// Problems point at the node concerned: a pairs: entry, the pattern:
// value, parallel:, or hosts: when the pattern is the default. A plan
// whose rounds need more open files than this process may open is one
// (checkOpenFiles).
func (l *loader) planFleet(d *fleetDraft, listed []fleet.Host) {
	f := d.f
	hosts := slices.Clone(listed)
	for i := range hosts {
		if len(hosts[i].Devices) == 0 {
			hosts[i].Devices = slices.Clone(d.devices)
		}
	}
	if err := fleet.CheckHosts(hosts); err != nil {
		l.errorf(d.hostsAt(), "hosts", "%s%v", d.from(), err)
		return
	}
	if !l.checkGrouping(d, hosts) {
		return
	}
	at, key := d.pattern, "pattern"
	if at == nil {
		at, key = d.hosts, "hosts"
	}
	if n := pairCount(f.Pattern, hosts, f.Options); n > maxFleetPairs {
		l.errorf(at, key, "%spattern %s over %d hosts yields %d pairs, more than %d; split the fleet, or choose ring or pairs", d.from(), f.Pattern, len(hosts), n, maxFleetPairs)
		return
	}
	if f.Pattern == fleet.ExplicitPairs && !l.checkPairs(d, hosts) {
		return
	}
	if f.AutoDevices && slices.ContainsFunc(hosts, func(h fleet.Host) bool { return len(h.Devices) == 0 }) {
		// The pairs wait for the hosts' devices (ResolveDevices).
		f.Hosts = hosts
		return
	}
	if f.Pattern == fleet.Rail && !slices.ContainsFunc(hosts, func(h fleet.Host) bool { return len(h.Devices) > 0 }) {
		// fleet's message speaks hostfile; this one YAML.
		l.errorf(at, key, "%srail pairs device i of each host with device i of the others, and no host lists devices; write devices: [mlx5_0, mlx5_1] for every host, or a host's own as {name: node1, devices: [mlx5_0, mlx5_1]}", d.from())
		return
	}
	pairs, err := f.Pattern.Pairs(hosts, f.Options)
	if err != nil {
		l.errorf(at, key, "%s%s", d.from(), patternMsg(key, err))
		return
	}
	rounds, err := f.Pattern.Rounds(pairs, f.Parallel)
	if err != nil {
		if msg, ok := strings.CutPrefix(err.Error(), "parallel: "); ok && d.parallel != nil {
			l.errorf(d.parallel, "parallel", "%s", msg)
			return
		}
		l.errorf(at, key, "%s%s", d.from(), patternMsg(key, err))
		return
	}
	f.Hosts, f.Pairs, f.Rounds = hosts, pairs, rounds
	if msg := checkOpenFiles(f, d.parallel != nil); msg != "" {
		// parallel: is the fix to point at, save for incast, whose
		// rounds it cannot split.
		if d.parallel != nil && f.Pattern != fleet.Incast {
			at, key = d.parallel, "parallel"
		}
		l.errorf(at, key, "%s", msg)
	}
}

// patternMsg drops the word pattern from fleet's message when the key
// already says it: "pattern: incast needs at least 2 hosts".
func patternMsg(key string, err error) string {
	if key == "pattern" {
		return strings.TrimPrefix(err.Error(), "pattern ")
	}
	return err.Error()
}

// hostsAt is the node a problem of the whole host list points at: the
// hostfile, DNS name or node list when one was given, else hosts:.
func (d *fleetDraft) hostsAt() *yaml.Node {
	if d.source != nil {
		return d.source
	}
	return d.hosts
}

// from says where resolved hosts came from, so that a message about host
// 7 of a DNS answer says which answer.
func (d *fleetDraft) from() string {
	if d.f.Source.Kind == HostsList {
		return ""
	}
	return "the hosts of " + d.f.Source.String() + ": "
}

// pairCount is how many pairs the pattern yields, computed without
// expanding so a huge fleet is refused before it is built.
func pairCount(p fleet.Pattern, hosts []fleet.Host, opt fleet.PatternOptions) int64 {
	n := int64(len(hosts))
	dirs := int64(1)
	if opt.BothDirections {
		dirs = 2
	}
	switch p {
	case fleet.AllPairs:
		return n * (n - 1) / 2 * dirs
	case fleet.Rail:
		rails := int64(0)
		for _, h := range hosts {
			rails = max(rails, int64(len(h.Devices)))
		}
		return rails * n * (n - 1) / 2 * dirs
	case fleet.Incast:
		return n * (n - 1)
	case fleet.ExplicitPairs:
		return int64(len(opt.Pairs))
	}
	return n
}

// checkPairs matches pairs: to the hosts, placing each problem at its
// entry.
func (l *loader) checkPairs(d *fleetDraft, hosts []fleet.Host) bool {
	names := make([]string, len(hosts))
	index := map[string]bool{}
	for i, h := range hosts {
		names[i] = h.Name
		index[h.Name] = true
	}
	ok := true
	seen := map[[2]string]*yaml.Node{}
	for i, pair := range d.f.Options.Pairs {
		nodes := d.pairs[i]
		known := true
		for e, name := range pair {
			if index[name] {
				continue
			}
			known = false
			msg := fmt.Sprintf("host %q is not in %s", name, d.hostsName())
			if s := yamlerr.DidYouMean(name, names, true); s != "" {
				msg += "; " + s
			} else if len(names) <= 8 {
				msg += "; the hosts are " + strings.Join(names, ", ")
			} else {
				msg += "; use a name as hosts: lists it"
			}
			l.errorf(nodes[e], "pairs", "%s", msg)
		}
		switch first, dup := seen[pair]; {
		case !known:
		case pair[0] == pair[1]:
			l.errorf(nodes[0], "pairs", "%s with itself; a pair needs two hosts", pair[0])
		case dup:
			l.errorf(nodes[0], "pairs", "%s -> %s is listed twice (first at line %d); list each pair once", pair[0], pair[1], first.Line)
		default:
			seen[pair] = nodes[0]
			continue
		}
		ok = false
	}
	return ok
}

// hostsName names the host list for messages about names missing from it.
func (d *fleetDraft) hostsName() string {
	if d.f.Source.Kind == HostsList {
		return "hosts:"
	}
	return "the hosts of " + d.f.Source.String()
}
