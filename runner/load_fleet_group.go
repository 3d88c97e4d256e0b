package runner

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/runner/report"
)

const allowedGroupBy = "write a host label such as rack, given as rack=r03 after the host in a hostfile or labels: {rack: r03} in the host list"

// parseGroupBy reads group_by:; checkGrouping matches it to the hosts'
// labels once those are known.
func (l *loader) parseGroupBy(d *fleetDraft, v *yaml.Node) {
	s, ok := l.text(v, "group_by", allowedGroupBy)
	if !ok {
		return
	}
	s = strings.TrimSpace(s)
	if err := fleet.CheckLabel(s, "x"); err != nil {
		l.errorf(yamlerr.Resolve(v), "group_by", "%v; %s", err, allowedGroupBy)
		return
	}
	d.f.GroupBy, d.groupBy = s, yamlerr.Resolve(v)
}

// hostLabels reads a listed host's labels: {rack: r03, rail: 1}.
func (l *loader) hostLabels(v *yaml.Node) (map[string]string, bool) {
	n := yamlerr.Resolve(v)
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		l.errorf(n, "labels", "want a mapping of label to value, not %s; write labels: {rack: r03, rail: 1}", yamlerr.Describe(n))
		return nil, false
	}
	labels := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := yamlerr.Resolve(n.Content[i]), n.Content[i+1]
		value, ok := l.scalar(val, "labels", "write the label's value, such as rack: r03")
		if !ok {
			return nil, false
		}
		if _, dup := labels[k.Value]; dup {
			l.errorf(k, "labels", "label %s given twice; give each label once", k.Value)
			return nil, false
		}
		if err := fleet.CheckLabel(k.Value, strings.TrimSpace(value)); err != nil {
			l.errorf(k, "labels", "%v", err)
			return nil, false
		}
		labels[k.Value] = strings.TrimSpace(value)
	}
	return labels, true
}

// checkGrouping holds group_by: to the hosts: every host has the label,
// and it makes at most report.MaxGroups groups. A host of an inline list
// that lacks it is named at its entry; any other problem at group_by:.
func (l *loader) checkGrouping(d *fleetDraft, hosts []fleet.Host) bool {
	by := d.f.GroupBy
	if by == "" {
		return true
	}
	if _, err := report.GroupHosts(hosts, by); err != nil {
		if i := slices.IndexFunc(hosts, func(h fleet.Host) bool { _, ok := h.Labels[by]; return !ok }); i >= 0 &&
			d.f.Source.Kind == HostsList && i < len(d.listNodes) && slices.ContainsFunc(hosts, func(h fleet.Host) bool { _, ok := h.Labels[by]; return ok }) {
			l.errorf(d.listNodes[i], "hosts", "host %s has no label %s, which group_by: groups by; add labels: {%s: VALUE} to it, or group by another label", hosts[i].Name, by, by)
			return false
		}
		l.errorf(d.groupBy, "group_by", "%s%v", d.from(), err)
		return false
	}
	return true
}

// ReportGrouping is what report.Fleet records of the grouping (its
// GroupBy and Groups): the label, and each host's group above
// report.LargeFleetHosts (none at or below, whose outputs draw every
// pair and stay as they were). The coordinator copies it into its
// report, so that every writer and later tool reads one grouping.
func (f *Fleet) ReportGrouping() (by string, groups []string) {
	if len(f.Hosts) <= report.LargeFleetHosts {
		return f.GroupBy, nil
	}
	groups, err := report.GroupHosts(f.Hosts, f.GroupBy)
	if err != nil {
		// The loader refused such a fleet; one built outside it is
		// grouped in blocks rather than not reported.
		groups, _ = report.GroupHosts(f.Hosts, "")
		return "", groups
	}
	return f.GroupBy, groups
}
