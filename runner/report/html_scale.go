package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/rdmarun/rdmarun/fleet"
)

// htmlLinks are where a large fleet's main page links to: each group's
// first page and each initiator's section, by index. Empty when the
// page is written alone (to stdout), with no group pages beside it.
type htmlLinks struct {
	group []string // group index -> file
	host  []string // host index -> file#anchor
	// maps are the group-by-group heat maps, once drawn; mapFiles, when
	// set, the page of each (see mainMapsBudget).
	maps     []string
	mapFiles []string
}

// mainMapsBudget is the most heat maps the main page holds inline: each
// is at most MaxGroups squared squares, some 0.8 MB, so a report of
// many metrics would pass 5 MB; above it each map gets its own page.
const mainMapsBudget = 3 << 20

// groupMaps draws each metric's group-by-group heat map, once per links.
func (l *htmlLinks) groupMaps(r *Report, groups []hostGroup) []string {
	if l != nil && l.maps != nil {
		return l.maps
	}
	f := r.Fleet
	lag := lagFactorOf(f)
	var maps []string
	for _, m := range f.Matrices {
		gm, pairs := groupMatrix(m, groups)
		maps = append(maps, heatGrid(gm, lag, heatOptions{
			axes: "initiator's group (row) &#8594; responder's group (column): the worst pair",
			who: func(x, y int) string {
				p := pairs[x][y]
				if p.Cell == nil {
					return groups[x].Name + " -> " + groups[y].Name
				}
				return fmt.Sprintf("%s -> %s, worst %s -> %s", groups[x].Name, groups[y].Name, f.Hosts[p.A].Name, f.Hosts[p.B].Name)
			},
			link: l.groupLink,
		}))
	}
	if l != nil {
		l.maps = maps
	}
	return maps
}

func (l *htmlLinks) groupLink(g int) string {
	if l == nil || g >= len(l.group) {
		return ""
	}
	return l.group[g]
}

func (l *htmlLinks) hostLink(h int) string {
	if l == nil || h >= len(l.host) {
		return ""
	}
	return l.host[h]
}

// largeFleetHTML is the main page's fleet part above LargeFleetHosts: a
// group-by-group heat map per metric, the suspects, the worst pairs per
// metric and the groups, each linking to its page of pair detail. It
// reads only the report's hosts, grouping, matrices and suspects: at
// that size the report holds no runs.
func largeFleetHTML(r *Report, links *htmlLinks) template.HTML {
	f := r.Fleet
	groups := groupsOf(f)
	gi := groupIndex(groups, len(f.Hosts))
	lag := lagFactorOf(f)
	var b strings.Builder
	fmt.Fprintf(&b, `<section class="fleet"><h2>Fleet: %d hosts from %s, pattern %s</h2>`+"\n",
		len(f.Hosts), esc(f.Source), esc(string(f.Pattern)))
	fmt.Fprintf(&b, "<p>%s. %s, %d groups. A fleet this size draws one square per pair of groups: its colour, value and mark are the worst pair of an initiator in the row's group and a responder in the column's, against the fleet median of its metric (over %gx worse is a lag); hover a square for the pair.", esc(roundsLine(r)), esc(groupingWords(f)), len(groups), lag)
	if links == nil {
		b.WriteString(" Written alone, this page has no group pages; write it to a file (--html FILE) for them.")
	} else {
		b.WriteString(" Each group's name links to its page of every pair it initiates.")
	}
	b.WriteString("</p>\n")
	maps := links.groupMaps(r, groups)
	if links != nil && links.mapFiles != nil {
		b.WriteString("<p>The maps are too many for one page; each metric's is on its own:</p>\n<ul>\n")
		for i, m := range f.Matrices {
			fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", esc(links.mapFiles[i]), esc(m.Metric))
		}
		b.WriteString("</ul>\n")
	} else {
		for _, m := range maps {
			b.WriteString(m + "\n")
		}
	}
	b.WriteString(suspectsTable(f.Suspects))
	b.WriteString(setupTable(f.Setup))
	worstTables(&b, f, groups, gi, links)
	groupsTable(&b, f, groups, links)
	b.WriteString("</section>\n")
	return template.HTML(b.String())
}

// groupingWords says how the hosts were grouped.
func groupingWords(f *Fleet) string {
	if f.GroupBy != "" {
		return "Hosts are grouped by their label " + f.GroupBy
	}
	return fmt.Sprintf("Hosts are grouped in blocks of %d in list order (group_by: LABEL groups them by a label such as rack)", max(GroupBlockHosts, (len(f.Hosts)+MaxGroups-1)/MaxGroups))
}

// worstTables list each metric's worstListed worst pairs, by ratio.
func worstTables(b *strings.Builder, f *Fleet, groups []hostGroup, gi []int, links *htmlLinks) {
	fmt.Fprintf(b, "<h3>Worst pairs</h3>\n<p>Per metric, the %d worst pairs: the most severe status first (env, fail, lag, ok), then by ratio to the fleet median (above 1 is worse).</p>\n", worstListed)
	for _, m := range f.Matrices {
		u := unitOf(m)
		fmt.Fprintf(b, `<table class="worst"><caption>%s, %s</caption><tr><th>rank</th><th>initiator</th><th>group</th><th>responder</th><th>group</th><th>%s</th><th>status</th><th>x median</th></tr>`+"\n",
			esc(m.Metric), esc(u.long), esc(u.short))
		for i, p := range worstPairs(m, worstListed) {
			initiator := esc(f.Hosts[p.A].Name)
			if l := links.hostLink(p.A); l != "" {
				initiator = fmt.Sprintf(`<a href="%s">%s</a>`, esc(l), initiator)
			}
			fmt.Fprintf(b, `<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class="%s">%s</td><td>%s</td></tr>`+"\n",
				i+1, initiator, esc(groups[gi[p.A]].Name), esc(f.Hosts[p.B].Name), esc(groups[gi[p.B]].Name),
				valueOrDash(p.Cell, u), statusClass(p.Cell.Status), p.Cell.Status, ratioOrDash(p.Cell))
		}
		b.WriteString("</table>\n")
	}
}

// groupsTable lists the groups with what their pairs found.
func groupsTable(b *strings.Builder, f *Fleet, groups []hostGroup, links *htmlLinks) {
	b.WriteString("<h3>Groups</h3>\n<p>Pairs not ok count each pair and metric whose initiator is in the group.</p>\n")
	b.WriteString(`<table class="groups"><tr><th>group</th><th>hosts</th><th>first host</th><th>last host</th><th>pairs not ok</th></tr>` + "\n")
	for g, grp := range groups {
		name := esc(grp.Name)
		if l := links.groupLink(g); l != "" {
			name = fmt.Sprintf(`<a href="%s">%s</a>`, esc(l), name)
		}
		n := groupBad(f.Matrices, grp)
		class := "passed"
		if n > 0 {
			class = "failed"
		}
		fmt.Fprintf(b, `<tr><td style="text-align:left">%s</td><td>%d</td><td>%s</td><td>%s</td><td class="%s">%d</td></tr>`+"\n",
			name, len(grp.Hosts), esc(f.Hosts[grp.Hosts[0]].Name), esc(f.Hosts[grp.Hosts[len(grp.Hosts)-1]].Name), class, n)
	}
	b.WriteString("</table>\n")
}

// groupBad counts the group's initiated pairs and metrics not ok.
func groupBad(ms []fleet.Matrix, grp hostGroup) int {
	n := 0
	for _, m := range ms {
		for _, a := range grp.Hosts {
			if a < len(m.Cells) {
				for _, c := range m.Cells[a] {
					if bad(c) {
						n++
					}
				}
			}
		}
	}
	return n
}

// statusClass is the page's class for a status: the one-pair tables'
// colours.
func statusClass(s fleet.Status) string {
	switch s {
	case fleet.StatusOK:
		return "passed"
	case fleet.StatusEnv:
		return "error"
	}
	return "failed"
}

func valueOrDash(c *fleet.Cell, u metricUnit) string {
	if c == nil || c.Value <= 0 {
		return "-"
	}
	return u.show(c.Value)
}

func ratioOrDash(c *fleet.Cell) string {
	if c == nil || c.Ratio <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", c.Ratio)
}
