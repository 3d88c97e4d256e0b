package report

import (
	"fmt"
	"io"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

// deliveryText writes what each UD run sent and what arrived, one line a
// run (a direction, when bidirectional), after the case's table: on UD a
// loss is a result, so it is printed whether or not a threshold reads it.
func deliveryText(w io.Writer, runs []Run, indent string) {
	said := false
	for _, run := range runs {
		res := run.Result
		if res == nil || res.Spec.QPType != rdma.UD {
			continue
		}
		if !said {
			fmt.Fprintf(w, "%sUD delivery (bytes are payload; each receive also holds the packet's %d-byte GRH):\n", indent, rdma.GRHBytes)
			said = true
		}
		label := lineLabel(run)
		if l := res.Latency; l != nil && l.Delivery != nil {
			d := l.Delivery
			fmt.Fprintf(w, "%s  %s: %d round trips, %d answered, %d lost (%.2f%%), %d late (after loss_timeout %v)%s\n",
				indent, label, d.Sent, d.Received, d.Lost, 100*d.LossRatio, d.Late, time.Duration(res.Spec.LossTimeout), silentText(d, res.Spec))
		}
		if len(res.Receivers) > 0 {
			multicastText(w, run, indent)
			continue
		}
		if b := res.Bandwidth; b != nil {
			for _, dir := range b.Directions {
				if d := dir.Delivery; d != nil {
					fmt.Fprintf(w, "%s  %s %s -> %s: sent %d (%.4g Gb/s), received %d (%.4g Gb/s), lost %d (%.2f%%)\n",
						indent, label, dir.From, dir.To, d.Sent, dir.Gbps(), d.Received, d.ReceivedGbps(), d.Lost, 100*d.LossRatio)
				}
			}
		}
	}
}

// multicastText writes a multicast run's sending and, one line each,
// what every receiver took from the group.
func multicastText(w io.Writer, run Run, indent string) {
	res := run.Result
	dir := res.Bandwidth.Directions[0]
	fmt.Fprintf(w, "%s  %s %s -> group %s: sent %d (%.4g Gb/s) to %d receivers; the worst lost %d (%.2f%%)\n",
		indent, lineLabel(run), dir.From, res.Spec.Multicast, dir.Messages, dir.Gbps(), len(res.Receivers), dir.Delivery.Lost, 100*dir.Delivery.LossRatio)
	for _, r := range res.Receivers {
		who := r.Device
		if r.Host != "" {
			who = r.Host + " (" + r.Device + ")"
		}
		d := r.Delivery
		fmt.Fprintf(w, "%s    %s: received %d (%.4g Gb/s), lost %d (%.2f%%)\n", indent, who, d.Received, d.ReceivedGbps(), d.Lost, 100*d.LossRatio)
	}
}

func silentText(d *rdma.Delivery, spec rdma.Test) string {
	if !d.Silent {
		return ""
	}
	return fmt.Sprintf("; ended early: nothing answered for stall_timeout %v", time.Duration(spec.StallTimeout))
}

// hasUD reports whether any run of runs is UD.
func hasUD(runs []Run) bool {
	for _, run := range runs {
		if run.Spec.QPType == rdma.UD {
			return true
		}
	}
	return false
}
