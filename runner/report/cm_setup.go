package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rdmarun/rdmarun/units"
)

// cmSetupHeader names the columns of a case's connection set-up table:
// per-QP times through the CM as the requester timed them, microseconds.
var cmSetupHeader = []string{"size", "qps", "mode", "measure", "resolve_addr p50", "resolve_route p50", "connect p50", "connect p99", "connect max", "set-up p50", "set-up max", "at once", "conn/s"}

// cmSetupRows are the rows of runs that connected through the CM; none
// when no run of the case did.
func cmSetupRows(runs []Run) [][]string {
	var rows [][]string
	for _, run := range runs {
		if run.Result == nil || run.Result.Connect == nil {
			continue
		}
		c := run.Result.Connect
		rows = append(rows, []string{
			units.FormatBytes(uint64(run.Spec.Size)), fmt.Sprint(run.Spec.QPs), run.Spec.Mode.String(), run.Spec.Measure.String(),
			units.Micros(c.ResolveAddr.P50), units.Micros(c.ResolveRoute.P50),
			units.Micros(c.Connect.P50), units.Micros(c.Connect.P99), units.Micros(c.Connect.Max),
			units.Micros(c.Total.P50), units.Micros(c.Total.Max),
			fmt.Sprint(c.Parallel), fmt.Sprintf("%.1f", c.PerSecond),
		})
	}
	return rows
}

// cmSetupText writes the set-up table of a case whose runs connected
// through the CM.
func cmSetupText(w io.Writer, runs []Run, indent string) error {
	rows := cmSetupRows(runs)
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "%sconnection set-up through rdma_cm, per QP as the requester timed it, microseconds:\n", indent)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, indent+strings.Join(cmSetupHeader, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, indent+strings.Join(r, "\t")+"\t")
	}
	return tw.Flush()
}
