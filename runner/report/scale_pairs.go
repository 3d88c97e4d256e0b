package report

import (
	"cmp"
	"slices"

	"github.com/rdmarun/rdmarun/fleet"
)

// worstListed is how many pairs per metric a large fleet's main HTML
// page and text list as its worst: enough to show a bad host's or link's
// pattern, few enough to read.
const worstListed = 20

// pairCell is one directed host pair of a matrix and its cell.
type pairCell struct {
	A, B int // indexes into the matrix's Hosts
	Cell *fleet.Cell
}

// severity orders statuses as fleet does: env over fail over lag over ok.
func severity(s fleet.Status) int {
	return map[fleet.Status]int{fleet.StatusOK: 0, fleet.StatusLag: 1, fleet.StatusFail: 2, fleet.StatusEnv: 3}[s]
}

// bad reports whether a pair's cell is anything but ok.
func bad(c *fleet.Cell) bool { return c != nil && c.Status != fleet.StatusOK }

// worse orders pairs worst first: the more severe status (env over
// fail over lag over ok, as a host pair's cell shows its most severe
// run), then the higher ratio to the median, which says how far off a
// pair is, then list order. A failed pair measured nothing, so has no
// ratio: by ratio alone it would rank under every lagging pair.
func worse(x, y pairCell) int {
	return cmp.Or(cmp.Compare(severity(y.Cell.Status), severity(x.Cell.Status)), cmp.Compare(y.Cell.Ratio, x.Cell.Ratio),
		cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
}

// worstPairs are m's n worst pairs by worse, bad or not, found in one
// pass with a bounded list so a 2,000-host matrix is not sorted whole.
func worstPairs(m fleet.Matrix, n int) []pairCell {
	var top []pairCell
	for a, row := range m.Cells {
		for b, c := range row {
			if c == nil {
				continue
			}
			p := pairCell{a, b, c}
			if len(top) == n && worse(p, top[n-1]) >= 0 {
				continue
			}
			i, _ := slices.BinarySearchFunc(top, p, worse)
			top = slices.Insert(top, i, p)
			if len(top) > n {
				top = top[:n]
			}
		}
	}
	return top
}

// groupMatrix is m over groups: cell (x, y) is the worst pair (by
// worse) of an initiator in group x and a responder in group y, and
// pairs gives which pair that is; nil where no such pair ran.
func groupMatrix(m fleet.Matrix, groups []hostGroup) (fleet.Matrix, [][]pairCell) {
	g := groupIndex(groups, len(m.Hosts))
	out := fleet.Matrix{Metric: m.Metric, HigherIsBetter: m.HigherIsBetter, Median: m.Median, Cells: make([][]*fleet.Cell, len(groups))}
	pairs := make([][]pairCell, len(groups))
	for x, grp := range groups {
		out.Hosts = append(out.Hosts, grp.Name)
		out.Cells[x] = make([]*fleet.Cell, len(groups))
		pairs[x] = make([]pairCell, len(groups))
	}
	for a, row := range m.Cells {
		for b, c := range row {
			if c == nil {
				continue
			}
			x, y := g[a], g[b]
			p := pairCell{a, b, c}
			if out.Cells[x][y] == nil || worse(p, pairs[x][y]) < 0 {
				out.Cells[x][y], pairs[x][y] = c, p
			}
		}
	}
	return out, pairs
}

// hostBadPairs are the pairs, over every metric, that host h is in and
// that are not ok, worst first by worse, with their metric's index.
func hostBadPairs(ms []fleet.Matrix, h int) (pairs []pairCell, metric []int) {
	type entry struct {
		p pairCell
		m int
	}
	var all []entry
	add := func(a, b int, c *fleet.Cell, mi int) {
		if bad(c) {
			all = append(all, entry{pairCell{a, b, c}, mi})
		}
	}
	// Host h's row and column only: a scan of every cell per host would
	// be N cubed at 2,000 hosts.
	for mi, m := range ms {
		if h < len(m.Cells) {
			for b, c := range m.Cells[h] {
				add(h, b, c, mi)
			}
		}
		for a, row := range m.Cells {
			if a != h && h < len(row) {
				add(a, h, row[h], mi)
			}
		}
	}
	slices.SortStableFunc(all, func(x, y entry) int { return cmp.Or(worse(x.p, y.p), cmp.Compare(x.m, y.m)) })
	for _, e := range all {
		pairs, metric = append(pairs, e.p), append(metric, e.m)
	}
	return pairs, metric
}
