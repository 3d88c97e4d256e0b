package report

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/rdmarun/rdmarun/units"
)

// minScalingQPs is how many QP counts a case's bandwidth runs must cover
// before the page draws them against QPs: with two points a line says
// nothing a table does not.
const minScalingQPs = 3

// scalingRow is one bandwidth run of a case that sweeps QPs.
type scalingRow struct {
	line       string // case, size and mode: one line of each chart
	qps        int
	mmsgs      float64 // messages per second, millions, all directions
	registered int64   // bytes both sides registered; 0 when not reported
}

// scalingRows picks the bandwidth runs with a result from the cases
// whose runs cover at least minScalingQPs QP counts, in case order, then
// by line and QPs.
func scalingRows(r *Report) []scalingRow {
	if r.Fleet != nil {
		return nil
	}
	var rows []scalingRow
	for _, c := range r.Cases() {
		counts := map[int]bool{}
		var rs []scalingRow
		for _, run := range c.Runs {
			res := run.Result
			if res == nil || res.Bandwidth == nil {
				continue
			}
			counts[run.Spec.QPs] = true
			row := scalingRow{line: fmt.Sprintf("%s %s %s", c.Name, units.FormatBytes(uint64(run.Spec.Size)), run.Spec.Mode), qps: run.Spec.QPs}
			for _, d := range res.Bandwidth.Directions {
				row.mmsgs += d.MessagesPerSec / 1e6
			}
			for _, s := range res.Sides {
				row.registered += s.RegisteredBytes
			}
			rs = append(rs, row)
		}
		if len(counts) < minScalingQPs {
			continue
		}
		sort.SliceStable(rs, func(i, j int) bool {
			if rs[i].line != rs[j].line {
				return rs[i].line < rs[j].line
			}
			return rs[i].qps < rs[j].qps
		})
		rows = append(rows, rs...)
	}
	return rows
}

// scalingHTML draws message rate and registered memory against QPs on a
// log axis, every sweeping case in the same two charts so that a case
// with a shared receive queue and one without sit side by side, and a
// table of the same numbers. It returns "" when no case sweeps QPs.
func scalingHTML(r *Report) template.HTML {
	rows := scalingRows(r)
	if len(rows) == 0 {
		return ""
	}
	rate, mem := map[string][]point{}, map[string][]point{}
	for _, row := range rows {
		x := math.Log2(float64(row.qps))
		rate[row.line] = append(rate[row.line], point{x, row.mmsgs})
		if row.registered > 0 {
			mem[row.line] = append(mem[row.line], point{x, float64(row.registered) / (1 << 20)})
		}
	}
	qpTick := func(x float64) string { return fmt.Sprintf("%.0f", math.Exp2(x)) }
	var b strings.Builder
	b.WriteString(`<section class="scaling"><h2>QP scaling</h2>` + "\n")
	b.WriteString(`<p>Bandwidth runs of the cases that sweep QP counts, QPs on a log axis: message rate (millions of messages per second, all directions) and the memory both sides registered (MiB, 2^20 bytes).</p>` + "\n")
	b.WriteString(string(lineChart("Message rate (Mmsg/s) vs QPs", rate, qpTick)))
	b.WriteString(string(lineChart("Registered memory, both sides (MiB) vs QPs", mem, qpTick)))
	b.WriteString("\n<table><tr><th>case, size, mode</th><th>qps</th><th>Mmsg/s</th><th>registered MiB</th></tr>\n")
	for _, row := range rows {
		reg := "-"
		if row.registered > 0 {
			reg = fmt.Sprintf("%.2f", float64(row.registered)/(1<<20))
		}
		fmt.Fprintf(&b, `<tr><td style="text-align:left">%s</td><td>%d</td><td>%.4f</td><td>%s</td></tr>`+"\n", template.HTMLEscapeString(row.line), row.qps, row.mmsgs, reg)
	}
	b.WriteString("</table></section>\n")
	return template.HTML(b.String())
}
