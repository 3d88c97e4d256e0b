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

// Compact writes a report of one test for a terminal, the way perftest
// users read one: what ran and where in a sentence, then every latency
// percentile or every bandwidth direction per size, then the verdicts
// that failed and a summary. Text's table, which fits any scenario, has
// no room for all of that. A fleet report gets Text's matrices and
// suspects, without its table of every pair's runs.
func (o TextOptions) Compact(w io.Writer, r *Report) error {
	if r.Fleet != nil {
		return fleetText(w, r, false, o)
	}
	var lat, bw []Run
	for _, run := range r.Runs {
		switch run.Spec.Measure {
		case rdma.MeasureBandwidth:
			bw = append(bw, run)
		case rdma.MeasureLatency:
			lat = append(lat, run)
		}
		// A measure connect run has only its set-up, in the set-up table.
	}
	if first := firstResult(r.Runs); first != nil {
		describeTest(w, first, r.Runs)
	} else if len(r.Runs) > 0 {
		s := r.Runs[0].Spec
		fmt.Fprintf(w, "%s %s, %s, peer %s\n", s.Op, s.Measure, strings.ToUpper(s.QPType.String()), r.Peer)
	}
	// Columns for settings that differ between runs; one test has none.
	varies := func(f func(rdma.Test) string) bool {
		for _, run := range r.Runs {
			if f(run.Spec) != f(r.Runs[0].Spec) {
				return true
			}
		}
		return false
	}
	qps := varies(func(s rdma.Test) string { return fmt.Sprint(s.QPs) })
	mode := varies(func(s rdma.Test) string { return s.Mode.String() })
	lead := func(run Run) string {
		cells := []string{units.FormatBytes(uint64(run.Spec.Size))}
		if qps {
			cells = append(cells, fmt.Sprint(run.Spec.QPs))
		}
		if mode {
			cells = append(cells, run.Spec.Mode.String())
		}
		return strings.Join(cells, "\t") + "\t"
	}
	leadHdr := "size\t"
	if qps {
		leadHdr += "qps\t"
	}
	if mode {
		leadHdr += "mode\t"
	}
	if len(lat) > 0 {
		if err := latencyTable(w, lat, leadHdr, lead); err != nil {
			return err
		}
	}
	if len(bw) > 0 {
		if len(lat) > 0 {
			fmt.Fprintln(w)
		}
		if err := bandwidthTable(w, bw, leadHdr, lead); err != nil {
			return err
		}
	}
	if hasUD(r.Runs) {
		fmt.Fprintln(w)
		deliveryText(w, r.Runs, "")
	}
	if hasSRQ(r.Runs) {
		fmt.Fprintln(w)
		srqText(w, r.Runs, "")
	}
	if rows := cmSetupRows(r.Runs); len(rows) > 0 {
		fmt.Fprintln(w)
		if err := cmSetupText(w, r.Runs, ""); err != nil {
			return err
		}
	}
	problems(w, r.Runs, "")
	categoriesText(w, r.Runs, "", o.Verbose)
	summary(w, r)
	return nil
}

func firstResult(runs []Run) *rdma.Result {
	for _, run := range runs {
		if run.Result != nil {
			return run.Result
		}
	}
	return nil
}

// describeTest says what ran, from the first result: the endpoints as
// resolved (devices, GIDs, path MTU) are only known once a test has run.
func describeTest(w io.Writer, res *rdma.Result, runs []Run) {
	s := res.Spec
	var measures []string
	for _, m := range []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth, rdma.MeasureConnect} {
		if slices.ContainsFunc(runs, func(r Run) bool { return r.Spec.Measure == m }) {
			measures = append(measures, m.String())
		}
	}
	measure := strings.Join(measures, " and ")
	if len(measures) > 2 {
		measure = strings.Join(measures[:len(measures)-1], ", ") + " and " + measures[len(measures)-1]
	}
	q, rq, rs := s.QP, res.Requester, res.Responder
	fmt.Fprintf(w, "%s %s, %s port %d (GID %d, %s) -> %s port %d (GID %d), %s, path MTU %d B, %s, %d QP(s) on %d thread(s) per side\n",
		s.Op, measure, rq.Device, rq.Port, rq.GIDIndex, rq.GIDType,
		rs.Device, rs.Port, rs.GIDIndex, strings.ToUpper(s.QPType.String()), q.MTU, s.Mode, s.QPs, s.Threads)
	how := "connected by " + s.Connect.String()
	if s.Multicast != "" {
		how = "joined to group " + s.Multicast + " through the CM"
	}
	fmt.Fprintf(w, "QP: timeout %d, retry_cnt %d, rnr_retry %d; inline up to %d B; %s.\n", q.Timeout, q.RetryCnt, q.RNRRetry, s.Inline, how)
}

func latencyTable(w io.Writer, runs []Run, leadHdr string, lead func(Run) string) error {
	oneWay := false
	for _, run := range runs {
		if run.Result != nil && run.Result.Latency != nil && run.Result.Latency.OneWay != nil {
			oneWay = true
		}
	}
	fmt.Fprint(w, "Times in microseconds. RTT is the round trip")
	if oneWay {
		fmt.Fprint(w, "; one-way is RTT/2, what perftest reports for send and write")
	}
	fmt.Fprint(w, ".\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := leadHdr + "iters\tRTT min\tRTT p50\tRTT p90\tRTT p99\tRTT p99.9\tRTT max\tRTT mean\tstddev\t"
	if oneWay {
		hdr += "one-way p50\t"
	}
	fmt.Fprintln(tw, hdr+"status\t")
	for _, run := range runs {
		fmt.Fprint(tw, lead(run))
		if run.Result == nil || run.Result.Latency == nil {
			fmt.Fprint(tw, strings.Repeat("-\t", strings.Count(hdr, "\t")-strings.Count(leadHdr, "\t")))
		} else {
			l := run.Result.Latency.RTT
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", l.Count, units.Micros(l.Min), units.Micros(l.P50), units.Micros(l.P90),
				units.Micros(l.P99), units.Micros(l.P999), units.Micros(l.Max), units.Micros(l.Mean), units.Micros(l.Stddev))
			if oneWay {
				ow := "-"
				if o := run.Result.Latency.OneWay; o != nil {
					ow = units.Micros(o.P50)
				}
				fmt.Fprintf(tw, "%s\t", ow)
			}
		}
		fmt.Fprintf(tw, "%s\t\n", run.Status)
	}
	return tw.Flush()
}

func bandwidthTable(w io.Writer, runs []Run, leadHdr string, lead func(Run) string) error {
	fmt.Fprint(w, "Bandwidth from first post to last completion. Gb/s is 10^9 bit/s; GiB/s is 2^30 bytes/s.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, leadHdr+"direction\tmessages\tseconds\tGb/s\tGiB/s\tMmsg/s\tstatus\t")
	for _, run := range runs {
		if run.Result == nil || run.Result.Bandwidth == nil || len(run.Result.Bandwidth.Directions) == 0 {
			fmt.Fprintf(tw, "%s-\t-\t-\t-\t-\t-\t%s\t\n", lead(run), run.Status)
			continue
		}
		for _, d := range run.Result.Bandwidth.Directions {
			fmt.Fprintf(tw, "%s%s -> %s\t%d\t%.3f\t%.3f\t%.4f\t%.4f\t%s\t\n", lead(run), d.From, d.To,
				d.Messages, d.Seconds, d.Gbps(), d.GiBps(), d.MessagesPerSec/1e6, run.Status)
		}
	}
	return tw.Flush()
}
