package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/junit"
)

// junitPairsListed bounds the bad pairs a host's testcase lists: a dead
// host at 2,000 hosts is in some 6,000 bad pairs and metrics, and CI
// shows the first few; the HTML's group pages have them all.
const junitPairsListed = 30

// junitLarge is JUnit above LargeFleetHosts: one suite of one testcase
// per host, which fails when a pair the host is in is not ok and lists
// its worst such pairs, rather than a testcase per run (a million at
// 1,000 hosts). The suite carries the fleet's properties and suspects
// as the small form's suites do.
func junitLarge(w io.Writer, r *Report) error {
	f := r.Fleet
	groups := groupsOf(f)
	gi := groupIndex(groups, len(f.Hosts))
	name := r.Scenario + ".hosts"
	s := junitSuite{Name: name, Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05Z"), Time: seconds(wallSeconds(f))}
	s.Props = append([]junitProperty{prop("peer", r.Peer), prop("tool", r.Tool)}, fleetProperties(r)...)
	s.Props = append(s.Props, prop("groups", fmt.Sprint(len(groups))), prop("group_by", groupByName(f)))
	s.SystemOut = suspectsOut(f)
	for h, host := range f.Hosts {
		tc := junitCase{Name: host.Name, Classname: name, Time: seconds(0), Props: []junitProperty{prop("group", groups[gi[h]].Name)}}
		pairs, metric := hostBadPairs(f.Matrices, h)
		switch {
		case len(pairs) > 0:
			lines := make([]string, 0, min(len(pairs), junitPairsListed)+1)
			for i, p := range pairs[:min(len(pairs), junitPairsListed)] {
				lines = append(lines, pairLine(f, f.Matrices[metric[i]], p))
			}
			if more := len(pairs) - junitPairsListed; more > 0 {
				lines = append(lines, fmt.Sprintf("... and %d more; the HTML report's page of each initiator's group lists every pair", more))
			}
			tc.Failure = &junitResult{Type: "pairs", Body: strings.Join(lines, "\n"),
				Message: fmt.Sprintf("%d pairs and metrics not ok; the worst: %s", len(pairs), lines[0])}
			s.Failures++
		case !ranAny(f.Matrices, h):
			tc.Skipped = &junitResult{Message: "no pair with this host ran"}
			s.Skipped++
		}
		s.Cases = append(s.Cases, tc)
		s.Tests++
	}
	out := junitSuites{Name: r.Scenario, Time: seconds(r.Finished.Sub(r.Started).Seconds()), Suites: []junitSuite{s},
		Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped}
	return junit.Write(w, out)
}

// groupByName says how the groups were made, for a property.
func groupByName(f *Fleet) string {
	if f.GroupBy != "" {
		return "label " + f.GroupBy
	}
	return "blocks in list order"
}

// pairLine is one pair of one metric for a terminal or a CI log:
// "lat 64B RTT p50: node1 -> node2 6.03 us lag, 3.01x the fleet median".
func pairLine(f *Fleet, m fleet.Matrix, p pairCell) string {
	u := unitOf(m)
	s := fmt.Sprintf("%s: %s -> %s ", m.Metric, f.Hosts[p.A].Name, f.Hosts[p.B].Name)
	if p.Cell.Value > 0 {
		s += u.show(p.Cell.Value) + " " + u.short + " "
	}
	s += string(p.Cell.Status)
	if p.Cell.Ratio > 0 {
		s += fmt.Sprintf(", %.2fx the fleet median", p.Cell.Ratio)
	}
	return s
}

// ranAny reports whether any pair with host h has a cell.
func ranAny(ms []fleet.Matrix, h int) bool {
	for _, m := range ms {
		for a, row := range m.Cells {
			if a == h {
				for _, c := range row {
					if c != nil {
						return true
					}
				}
			} else if h < len(row) && row[h] != nil {
				return true
			}
		}
	}
	return false
}
