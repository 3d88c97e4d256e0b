package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// TextOptions say how much Text and Compact show; the zero value is
// what a terminal or a CI log wants.
type TextOptions struct {
	// Verbose gives every side of every run a counters line with all its
	// categories, zero ones and the ones its drivers lack. Without it a
	// side has a line only when a count moved, with only what moved: on
	// a quiet link those lines are most of a long report and say nothing.
	Verbose bool
}

// Text writes the report with the zero TextOptions.
func Text(w io.Writer, r *Report) error { return TextOptions{}.Text(w, r) }

// Compact writes the report with the zero TextOptions.
func Compact(w io.Writer, r *Report) error { return TextOptions{}.Compact(w, r) }

// Text writes the report for a terminal or a CI log: one table per case,
// with units in the headers, then the verdicts that failed and a summary.
// A fleet report opens with a matrix per metric, the rounds and the
// suspects, and its tables name the pair that ran each run.
func (o TextOptions) Text(w io.Writer, r *Report) error {
	if r.Fleet != nil {
		return fleetText(w, r, true, o)
	}
	fmt.Fprintf(w, "scenario %s (%s), peer %s, %s\n", r.Scenario, r.File, r.Peer, r.Tool)
	fmt.Fprintf(w, "Latency in microseconds: RTT is the round trip; one-way is RTT/2 (send and write only). Bandwidth in Gb/s (10^9 bit/s) and GiB/s.\n")
	for _, c := range r.Cases() {
		if err := caseTable(w, c, o, nil, nil); err != nil {
			return err
		}
	}
	if len(r.Doctor) > 0 {
		fmt.Fprintf(w, "\ndoctor, as a threshold failed (checks at fail, warn or cannot_tell; rdmarun doctor lists them all):\n")
		doctorText(w, r.Doctor, "  ")
	}
	summary(w, r)
	return nil
}

// caseTable writes one case's runs as a table and then their problems.
// lead, when set, gives each row's first cells, under the headers in
// leadHeader: a fleet's pair and round.
func caseTable(w io.Writer, c CaseRuns, o TextOptions, leadHeader []string, lead func(Run) []string) error {
	fmt.Fprintf(w, "\ncase %s: %s %s\n", c.Name, c.Runs[0].Spec.Op, c.Runs[0].Spec.QPType)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := append(slices.Clone(leadHeader), "size", "qps", "mode", "measure", "RTT p50", "RTT p99", "RTT p99.9", "one-way p50", "Gb/s", "GiB/s", "Mmsg/s", "status")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, run := range c.Runs {
		var cells []string
		if lead != nil {
			cells = lead(run)
		}
		cells = append(cells, units.FormatBytes(uint64(run.Spec.Size)), fmt.Sprint(run.Spec.QPs), run.Spec.Mode.String(), run.Spec.Measure.String())
		cells = append(cells, metricCells(run.Result)...)
		cells = append(cells, string(run.Status))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := cmSetupText(w, c.Runs, "  "); err != nil {
		return err
	}
	deliveryText(w, c.Runs, "  ")
	srqText(w, c.Runs, "  ")
	problems(w, c.Runs, "  ")
	categoriesText(w, c.Runs, "  ", o.Verbose)
	return nil
}

// problems lists the runs' errors and the verdicts that failed, each
// line starting with indent and naming the pair in a fleet run.
func problems(w io.Writer, runs []Run, indent string) {
	for _, run := range runs {
		label := lineLabel(run)
		if run.Error != "" {
			fmt.Fprintf(w, "%s%s: error: %s\n", indent, label, run.Error)
		}
		for _, v := range run.Verdicts {
			if !v.Passed {
				fmt.Fprintf(w, "%s%s: FAILED %s%s\n", indent, label, v.Expr, valuesText(v))
			}
		}
	}
}

// lineLabel names a run at the start of a line under its case: its
// size, measure, QPs and mode, after its pair in a fleet run.
func lineLabel(run Run) string {
	if run.Pair != nil {
		return pairText(run.Pair) + " " + run.Label()
	}
	return run.Label()
}

// summary closes a report: the counts, and why it stopped early.
func summary(w io.Writer, r *Report) {
	s := r.Summary
	fmt.Fprintf(w, "\n%d runs: %d passed, %d failed, %d errors, %d skipped\n", s.Runs, s.Passed, s.Failed, s.Errors, s.Skipped)
	if r.Stopped != "" {
		fmt.Fprintf(w, "stopped early: %s\n", r.Stopped)
	}
}

func metricCells(res *rdma.Result) []string {
	blank := []string{"-", "-", "-", "-", "-", "-", "-"}
	if res == nil {
		return blank
	}
	if l := res.Latency; l != nil {
		if l.RTT.Count == 0 {
			return blank // a UD run whose round trips were all lost
		}
		ow := "-"
		if l.OneWay != nil {
			ow = units.Micros(l.OneWay.P50)
		}
		return []string{units.Micros(l.RTT.P50), units.Micros(l.RTT.P99), units.Micros(l.RTT.P999), ow, "-", "-", "-"}
	}
	if b := res.Bandwidth; b != nil && len(b.Directions) > 0 {
		var gbps, gib, mps float64
		for _, d := range b.Directions {
			gbps += d.Gbps()
			gib += d.GiBps()
			mps += d.MessagesPerSec / 1e6
		}
		return []string{"-", "-", "-", "-", fmt.Sprintf("%.3f", gbps), fmt.Sprintf("%.4f", gib), fmt.Sprintf("%.4f", mps)}
	}
	return blank
}

// valuesText renders the values a threshold saw, sorted by name.
func valuesText(v Verdict) string {
	if v.Error != "" {
		return " (" + v.Error + ")"
	}
	if len(v.Values) == 0 {
		return ""
	}
	names := make([]string, 0, len(v.Values))
	for n := range v.Values {
		names = append(names, n)
	}
	sortStrings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%.4g", n, v.Values[n])
	}
	return " with " + strings.Join(parts, ", ")
}
