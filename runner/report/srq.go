package report

import (
	"fmt"
	"io"

	"github.com/rdmarun/rdmarun/units"
)

// srqText writes, for each run over shared receive queues, the memory
// each side registered and whether the receiving side's queue ran low:
// its limit event (an eighth of srq_depth, armed once per run) and the
// RNR NAKs it sent, which a starved queue makes.
func srqText(w io.Writer, runs []Run, indent string) {
	said := false
	for _, run := range runs {
		res := run.Result
		if res == nil || !res.Spec.SRQ || len(res.Sides) < 2 {
			continue
		}
		if !said {
			fmt.Fprintf(w, "%sshared receive queues (srq_depth receives per side):\n", indent)
			said = true
		}
		label := lineLabel(run)
		req, resp := res.Sides[0], res.Sides[1]
		rnr := resp.Counters.HWCounters["send_rnr_err"] + req.Counters.HWCounters["send_rnr_err"]
		low := "did not run low"
		if resp.SRQLimitReached > 0 || req.SRQLimitReached > 0 || rnr > 0 {
			low = fmt.Sprintf("ran low (limit event %d, RNR NAKs sent %d): the senders outran srq_depth %d; raise it to measure the link, not the queue", resp.SRQLimitReached+req.SRQLimitReached, rnr, res.Spec.SRQDepth)
		}
		fmt.Fprintf(w, "%s  %s: srq_depth %d, registered %s (%s) and %s (%s); the queue %s\n", indent, label, res.Spec.SRQDepth,
			units.FormatBytes(uint64(req.RegisteredBytes)), req.Device, units.FormatBytes(uint64(resp.RegisteredBytes)), resp.Device, low)
	}
}

// hasSRQ reports whether any run of runs shares receive queues.
func hasSRQ(runs []Run) bool {
	for _, run := range runs {
		if run.Spec.SRQ {
			return true
		}
	}
	return false
}
