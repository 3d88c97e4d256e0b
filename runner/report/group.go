package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmarun/rdmarun/fleet"
)

// GroupBlockHosts is how many hosts, in list order, make a group of a
// large fleet that names no group_by: label: 32 keeps a group's page to
// some 32 x N pairs and the group-by-group heat map at N/32 squared
// cells.
const GroupBlockHosts = 32

// MaxGroups bounds the groups of a large fleet: the group-by-group heat
// map draws MaxGroups squared cells per metric at most, which keeps the
// main page small (see htmlPageBudget). Blocks grow past GroupBlockHosts
// hosts when the fleet would otherwise make more; a group_by: label that
// makes more is refused at load.
const MaxGroups = 64

// GroupHosts names each host's group, in hosts' order: the value of its
// label by, or, when by is "", its block of hosts in list order, named
// by its first and last host ("node001..node032"). It fails when a host
// lacks the label, or the label makes more than MaxGroups groups.
func GroupHosts(hosts []fleet.Host, by string) ([]string, error) {
	groups := make([]string, len(hosts))
	if by == "" {
		size := max(GroupBlockHosts, (len(hosts)+MaxGroups-1)/MaxGroups)
		for start := 0; start < len(hosts); start += size {
			end := min(start+size, len(hosts))
			name := hosts[start].Name
			if end-start > 1 {
				name += ".." + hosts[end-1].Name
			}
			for i := start; i < end; i++ {
				groups[i] = name
			}
		}
		return groups, nil
	}
	var missing []string
	distinct := map[string]bool{}
	for i, h := range hosts {
		v, ok := h.Labels[by]
		if !ok {
			missing = append(missing, h.Name)
			continue
		}
		groups[i] = v
		distinct[v] = true
	}
	switch {
	case len(missing) == len(hosts):
		return nil, fmt.Errorf("no host has the label %s%s", by, labelsHint(hosts))
	case len(missing) > 0:
		more := ""
		if len(missing) > 3 {
			more = fmt.Sprintf(" and %d more", len(missing)-3)
			missing = missing[:3]
		}
		return nil, fmt.Errorf("host %s%s has no label %s; give every host %s=VALUE, or group by another label", strings.Join(missing, ", "), more, by, by)
	case len(distinct) > MaxGroups:
		return nil, fmt.Errorf("label %s makes %d groups, more than %d; group by a coarser label (a rack rather than a node), or leave group_by out for blocks of %d hosts", by, len(distinct), MaxGroups, GroupBlockHosts)
	}
	return groups, nil
}

// labelsHint lists the labels the hosts do have, for an error about one
// they do not.
func labelsHint(hosts []fleet.Host) string {
	seen := map[string]bool{}
	for _, h := range hosts {
		for k := range h.Labels {
			seen[k] = true
		}
	}
	if len(seen) == 0 {
		return "; no host has labels: add them as KEY=VALUE after the host in a hostfile (node17 rack=r03), or labels: {rack: r03} in the list"
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return "; the hosts' labels are " + strings.Join(keys, ", ")
}

// hostGroup is one group of a large fleet: its name and its hosts'
// indexes into Fleet.Hosts, in list order.
type hostGroup struct {
	Name  string
	Hosts []int
}

// groupsOf is the grouping a large fleet's outputs show: the one the
// report records (Fleet.Groups), else GroupHosts over its hosts with
// Fleet.GroupBy, else blocks, so that every writer shows the same groups.
// The groups come in the order of their first host.
func groupsOf(f *Fleet) []hostGroup {
	names := f.Groups
	if len(names) != len(f.Hosts) {
		var err error
		if names, err = GroupHosts(f.Hosts, f.GroupBy); err != nil {
			names, _ = GroupHosts(f.Hosts, "")
		}
	}
	var out []hostGroup
	index := map[string]int{}
	for h, name := range names {
		g, ok := index[name]
		if !ok {
			g = len(out)
			index[name] = g
			out = append(out, hostGroup{Name: name})
		}
		out[g].Hosts = append(out[g].Hosts, h)
	}
	return out
}

// groupIndex maps each host to its group's index in groups.
func groupIndex(groups []hostGroup, hosts int) []int {
	idx := make([]int, hosts)
	for g, grp := range groups {
		for _, h := range grp.Hosts {
			idx[h] = g
		}
	}
	return idx
}
