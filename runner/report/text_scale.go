package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/rdmarun/rdmarun/fleet"
)

// textMatrixColumns is the widest matrix the text report prints: a wide
// terminal's width. A wider one (some 16 hosts and more, by their names
// and values) would wrap into noise, so the report ranks the worst pairs
// instead.
const textMatrixColumns = 200

// rankedText reports whether the text report ranks pairs rather than
// printing matrices: above LargeFleetHosts, or when a matrix is wider
// than textMatrixColumns.
func rankedText(f *Fleet) bool {
	if f.Large() {
		return true
	}
	for _, m := range f.Matrices {
		if matrixWidth(m) > textMatrixColumns {
			return true
		}
	}
	return false
}

// matrixWidth is how wide matrixText prints m: each column as wide as
// its widest cell, plus the tabwriter's padding of 2.
func matrixWidth(m fleet.Matrix) int {
	u := unitOf(m)
	first := len("initiator \\ responder")
	for _, h := range m.Hosts {
		first = max(first, len(h))
	}
	width := first + 2
	for b, h := range m.Hosts {
		col := len(h)
		for a := range m.Hosts {
			var c *fleet.Cell
			if a < len(m.Cells) && b < len(m.Cells[a]) {
				c = m.Cells[a][b]
			}
			col = max(col, len(cellText(c, u)))
		}
		width += col + 2
	}
	return width
}

// worstText ranks each metric's worst pairs, the matrices' stand-in
// when they do not fit.
func worstText(w io.Writer, f *Fleet) error {
	fmt.Fprintf(w, "\nThe matrices are too wide to print: per metric the %d worst pairs, the most severe status first (env, fail, lag, ok), then by ratio to the fleet median (above 1 is worse).\n", worstListed)
	for _, m := range f.Matrices {
		u := unitOf(m)
		matrixHeading(w, m, u)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "rank\tinitiator\tresponder\tvalue\tstatus\tx median\t")
		for i, p := range worstPairs(m, worstListed) {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t\n", i+1, m.Hosts[p.A], m.Hosts[p.B], valueOrDash(p.Cell, u), p.Cell.Status, ratioOrDash(p.Cell))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// groupsText summarises a large fleet's groups: what each holds and how
// many of the pairs it initiates are not ok.
func groupsText(w io.Writer, f *Fleet) error {
	groups := groupsOf(f)
	fmt.Fprintf(w, "\n%d groups, %s; pairs not ok count each pair and metric whose initiator is in the group:\n", len(groups), groupByName(f))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\thosts\tfirst host\tlast host\tpairs not ok\t")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t\n", g.Name, len(g.Hosts), f.Hosts[g.Hosts[0]].Name, f.Hosts[g.Hosts[len(g.Hosts)-1]].Name, groupBad(f.Matrices, g))
	}
	return tw.Flush()
}
