package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
)

// metricUnit says how a fleet matrix's values read for people. Matrices
// hold seconds (latency) or bytes per second (bandwidth, the one metric
// where higher is better), and nobody reads an RTT of 2.1e-06.
type metricUnit struct {
	scale float64 // multiplies a stored value into the shown unit
	short string  // "us", "Gb/s"
	long  string  // for a legend or a heading
}

func unitOf(m fleet.Matrix) metricUnit {
	if m.HigherIsBetter {
		return metricUnit{8 / 1e9, "Gb/s", "Gb/s (10^9 bit/s)"}
	}
	return metricUnit{1e6, "us", "microseconds"}
}

// show prints a stored value in the unit, two decimals as the one-pair
// tables print microseconds.
func (u metricUnit) show(v float64) string { return fmt.Sprintf("%.2f", v*u.scale) }

// lagFactorOf is the factor the statuses were judged with: the one the
// report names, else the fleet's default, as fleet.Matrices applies it.
func lagFactorOf(f *Fleet) float64 {
	if f.LagFactor > 0 {
		return f.LagFactor
	}
	return fleet.DefaultLagFactor
}

// cellText is a matrix cell for a terminal: the value, then a mark when
// the pair is not ok; "-" where the pair did not run.
func cellText(c *fleet.Cell, u metricUnit) string {
	if c == nil {
		return "-"
	}
	var parts []string
	if c.Value > 0 {
		parts = append(parts, u.show(c.Value))
	}
	if c.Status != fleet.StatusOK || len(parts) == 0 {
		parts = append(parts, string(c.Status))
	}
	return strings.Join(parts, " ")
}

// fleetText writes a fleet report for a terminal: a matrix per metric,
// how the rounds ran and the ranked suspects, since those answer the
// question a fleet run asks (which host or link is bad). With tables
// (Text) every run follows in a table per case, its pair first; without
// (Compact) only the runs that failed or errored do. A matrix too wide
// for a terminal gives way to a ranked list of the worst pairs (see
// rankedText), and above LargeFleetHosts a summary of the groups takes
// the runs' place.
func fleetText(w io.Writer, r *Report, tables bool, o TextOptions) error {
	f := r.Fleet
	fmt.Fprintf(w, "scenario %s (%s), %d hosts from %s, pattern %s, %s\n", r.Scenario, r.File, len(f.Hosts), f.Source, f.Pattern, r.Tool)
	fmt.Fprintf(w, "Latency in microseconds (RTT, the round trip); bandwidth in Gb/s (10^9 bit/s).\n")
	fmt.Fprintf(w, "Matrices: rows initiate, columns respond; \"-\" where no pair ran. Marks: lag = over %gx worse than the fleet median, fail = the test failed, env = a host did not answer.\n", lagFactorOf(f))
	if rankedText(f) {
		if err := worstText(w, f); err != nil {
			return err
		}
	} else {
		for _, m := range f.Matrices {
			if err := matrixText(w, m); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "\n%s\n", roundsLine(r))
	suspectsText(w, f.Suspects)
	setupText(w, f.Setup)
	if f.Large() {
		// At this size the runs' detail is in the runs file.
		if err := groupsText(w, f); err != nil {
			return err
		}
	} else if tables {
		for _, c := range r.Cases() {
			if err := caseTable(w, c, o, []string{"pair", "round"}, pairCells); err != nil {
				return err
			}
		}
	} else {
		var bad []Run
		for _, run := range r.Runs {
			if run.Error != "" || run.Status == Failed {
				bad = append(bad, run)
			}
		}
		if len(bad) > 0 {
			fmt.Fprintf(w, "\nfailed and errored runs:\n")
			for _, run := range bad {
				problems(w, []Run{run}, "  case "+run.Case+": ")
			}
		}
	}
	if len(r.Doctor) > 0 {
		fmt.Fprintf(w, "\ndoctor on the suspects' hosts (checks at fail, warn or cannot_tell; rdmarun doctor lists them all):\n")
		doctorText(w, r.Doctor, "  ")
	}
	summary(w, r)
	return nil
}

// pairCells are the first cells of a fleet run's row: its pair and round.
func pairCells(run Run) []string {
	round := "-"
	if run.Pair != nil {
		round = fmt.Sprint(run.Pair.Round)
	}
	return []string{pairText(run.Pair), round}
}

// pairText names the pair that ran a fleet run, "a -> b", with the
// confirmation attempt when it is one.
func pairText(p *PairRun) string {
	if p == nil {
		return ""
	}
	s := p.A + " -> " + p.B
	if p.Attempt > 0 {
		s += fmt.Sprintf(" attempt %d", p.Attempt)
	}
	return s
}

// matrixHeading names a matrix's metric, unit and fleet median, above
// its table or its ranked list.
func matrixHeading(w io.Writer, m fleet.Matrix, u metricUnit) {
	median := "none measured"
	if m.Median > 0 {
		median = u.show(m.Median) + " " + u.short
	}
	fmt.Fprintf(w, "\n%s, %s (fleet median %s)\n", m.Metric, u.long, median)
}

func matrixText(w io.Writer, m fleet.Matrix) error {
	u := unitOf(m)
	matrixHeading(w, m, u)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "initiator \\ responder\t")
	for _, h := range m.Hosts {
		fmt.Fprintf(tw, "%s\t", h)
	}
	fmt.Fprintln(tw)
	for a, h := range m.Hosts {
		fmt.Fprintf(tw, "%s\t", h)
		for b := range m.Hosts {
			var c *fleet.Cell
			if a < len(m.Cells) && b < len(m.Cells[a]) {
				c = m.Cells[a][b]
			}
			fmt.Fprintf(tw, "%s\t", cellText(c, u))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// roundsLine says how the pairs were scheduled and what that saved: the
// wall time against the runs' times added up, as one after another.
func roundsLine(r *Report) string {
	f := r.Fleet
	confirm, most := 0, 0
	for _, rd := range f.Rounds {
		if rd.Attempt > 0 {
			confirm++
		}
		most = max(most, len(rd.Pairs))
	}
	s := fmt.Sprintf("%d rounds (%d confirmation), at most %d pairs at once", len(f.Rounds), confirm, most)
	if f.Parallel > 0 {
		s += fmt.Sprintf(" (parallel %d)", f.Parallel)
	}
	switch {
	case len(f.Rounds) > 0 && len(r.Runs) == 0 && r.Summary.Runs > 0:
		// A large fleet's runs are in its runs file, not here to add up.
		s += fmt.Sprintf(", wall time %.3f s", wallSeconds(f))
	case len(f.Rounds) > 0:
		s += fmt.Sprintf(", wall time %.3f s against %.3f s for the runs one after another", wallSeconds(f), serialSeconds(r))
	}
	return s
}

// serialSeconds adds up every run's wall time.
func serialSeconds(r *Report) float64 {
	var sum float64
	for _, run := range r.Runs {
		sum += run.Seconds
	}
	return sum
}

// suspectsText ranks the suspects with their evidence. The evidence is
// fleet's own text, which gives values in the metric's stored unit, so
// the heading says which that is.
func suspectsText(w io.Writer, suspects []fleet.Suspect) {
	if len(suspects) == 0 {
		fmt.Fprintf(w, "\nno suspects: no host or link is bad\n")
		return
	}
	fmt.Fprintf(w, "\nsuspects, worst first (score: bad pairs explained; evidence: RTT in microseconds, bandwidth in Gb/s, each against the fleet median):\n")
	for i, s := range suspects {
		fmt.Fprintf(w, "  %d. %s %s, score %g\n", i+1, s.Kind, s.Name, s.Score)
		for _, e := range s.Evidence {
			fmt.Fprintf(w, "       %s\n", e)
		}
	}
}

// wallSeconds is the fleet's wall time from the first round's start to
// the last one's end, 0 when no round ran.
func wallSeconds(f *Fleet) float64 {
	if len(f.Rounds) == 0 {
		return 0
	}
	return f.Rounds[len(f.Rounds)-1].Finished.Sub(f.Rounds[0].Started).Round(time.Millisecond).Seconds()
}

// setupText lists the hosts whose own set-up failed: fix the host, not the
// fabric.
func setupText(w io.Writer, setup []SetupFinding) {
	if len(setup) == 0 {
		return
	}
	fmt.Fprintf(w, "\nhost set-up (the host's own configuration, not the fabric; no suspect is named from these):\n")
	for _, f := range setup {
		fmt.Fprintf(w, "  %s: %d runs could not run: %s\n", f.Host, f.Runs, f.Error)
	}
}
