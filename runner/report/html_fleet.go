package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/rdmarun/rdmarun/fleet"
)

// fleetHTML is a fleet report's own part of the page: a heat map per
// metric, how the rounds ran, and the suspects with their evidence.
func fleetHTML(r *Report) template.HTML {
	f := r.Fleet
	var b strings.Builder
	lag := lagFactorOf(f)
	fmt.Fprintf(&b, `<section class="fleet"><h2>Fleet: %d hosts from %s, pattern %s</h2>`+"\n",
		len(f.Hosts), template.HTMLEscapeString(f.Source), template.HTMLEscapeString(string(f.Pattern)))
	fmt.Fprintf(&b, "<p>%s. Rows initiate, columns respond. A cell's colour is its value against the fleet median of its metric; over %gx worse is a lag.</p>\n",
		template.HTMLEscapeString(roundsLine(r)), lag)
	for _, m := range f.Matrices {
		b.WriteString(heatMap(m, lag))
		b.WriteString("\n")
	}
	b.WriteString(suspectsTable(f.Suspects))
	b.WriteString(setupTable(f.Setup))
	b.WriteString("</section>\n")
	return template.HTML(b.String())
}

// The heat map's palette. Good to lagging runs green, yellow, orange
// (a diverging scale that stays readable for red-green colour blindness
// thanks to the lightness step at yellow); what lags is red, and the two
// kinds of failure are dark, with their mark written in the cell so no
// status rests on colour alone.
const (
	colourGood = "#1a9850"
	colourMid  = "#fee08b"
	colourNear = "#fc8d59" // just under the lag factor
	colourLag  = "#d73027"
	colourFail = "#67001f"
	colourEnv  = "#555555"
	colourNone = "#f4f4f4"
)

// ratioColour maps a ratio to the median (above 1 is worse) onto the
// palette: the median or better is green, the lag factor orange.
func ratioColour(ratio, lag float64) string {
	switch {
	case ratio <= 1:
		return colourGood
	case ratio > lag:
		return colourLag
	}
	t := (ratio - 1) / (lag - 1) // 0 at the median, 1 at the lag factor
	if t < 0.5 {
		return blend(colourGood, colourMid, t*2)
	}
	return blend(colourMid, colourNear, t*2-1)
}

// blend mixes two #rrggbb colours, t in [0, 1] from a to b.
func blend(a, b string, t float64) string {
	var ca, cb [3]int
	fmt.Sscanf(a, "#%02x%02x%02x", &ca[0], &ca[1], &ca[2])
	fmt.Sscanf(b, "#%02x%02x%02x", &cb[0], &cb[1], &cb[2])
	var out [3]int
	for i := range out {
		out[i] = int(math.Round(float64(ca[i]) + t*float64(cb[i]-ca[i])))
	}
	return fmt.Sprintf("#%02x%02x%02x", out[0], out[1], out[2])
}

// textOn picks a legible text colour for a cell's fill.
func textOn(fill string) string {
	var c [3]int
	fmt.Sscanf(fill, "#%02x%02x%02x", &c[0], &c[1], &c[2])
	if 0.299*float64(c[0])+0.587*float64(c[1])+0.114*float64(c[2]) < 140 {
		return "#fff"
	}
	return "#222"
}

// denseAbove is the host count above which a heat map's cells are too
// many to print values in: the grid shrinks to squares with a status
// letter, and each cell's tooltip still gives its value.
const denseAbove = 16

// heatMap draws one metric as an SVG grid, hosts on both axes.
func heatMap(m fleet.Matrix, lag float64) string {
	return heatGrid(m, lag, heatOptions{axes: "initiator (row) &#8594; responder (column)"})
}

// heatOptions adapt heatGrid to a grid of groups: what the axes are, who
// a cell stands for, and where a row's label links to.
type heatOptions struct {
	axes string // the line under the title, already HTML
	// who names cell (a, b) for its tooltip; nil: "row -> column".
	who func(a, b int) string
	// link is row a's page, "" for none; nil: no links.
	link func(a int) string
}

// heatGrid draws m as an SVG grid, m.Hosts (hosts or groups) on both
// axes.
func heatGrid(m fleet.Matrix, lag float64, o heatOptions) string {
	u := unitOf(m)
	longest := 0
	for _, h := range m.Hosts {
		longest = max(longest, len(h))
	}
	const legendH = 64
	n := len(m.Hosts)
	dense := n > denseAbove
	cw, ch := 64, 32
	if dense {
		cw, ch = 20, 20
	}
	left := 20 + 7*max(longest, 6)
	top := 54 + int(float64(7*longest)*0.72) // column names slant up at 45 degrees
	w := max(left+cw*n+20, legendWidth(lag)+20)
	h := top + ch*n + legendH
	title := fmt.Sprintf("%s, %s", m.Metric, u.long)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="heatmap" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d">`, esc(title), w, h, w, h)
	median := "none measured"
	if m.Median > 0 {
		median = u.show(m.Median) + " " + u.short
	}
	fmt.Fprintf(&b, `<text x="10" y="18" class="title">%s (fleet median %s)</text>`, esc(title), esc(median))
	fmt.Fprintf(&b, `<text x="10" y="34" class="tick">%s</text>`, o.axes)
	for i, name := range m.Hosts {
		x, y := left+cw*i+cw/2-4, top-6
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick" transform="rotate(-45 %d %d)">%s</text>`, x, y, x, y, esc(name))
		row := fmt.Sprintf(`<text x="%d" y="%d" class="tick" text-anchor="end">%s</text>`, left-6, top+ch*i+ch/2+4, esc(name))
		if o.link != nil && o.link(i) != "" {
			row = fmt.Sprintf(`<a href="%s">%s</a>`, esc(o.link(i)), row)
		}
		b.WriteString(row)
	}
	for a := range m.Hosts {
		for bi := range m.Hosts {
			var c *fleet.Cell
			if a < len(m.Cells) && bi < len(m.Cells[a]) {
				c = m.Cells[a][bi]
			}
			who := m.Hosts[a] + " -> " + m.Hosts[bi]
			if o.who != nil {
				who = o.who(a, bi)
			}
			b.WriteString(heatCell(who, c, u, lag, left+cw*bi, top+ch*a, cw, ch, dense))
		}
	}
	heatLegend(&b, u, lag, top+ch*n+16, dense, !dense && suffixed(m, u))
	b.WriteString(`</svg>`)
	return b.String()
}

// heatCell is one pair: a coloured square, its value and status mark
// (dense: the mark's first letter only), and a tooltip that says it all
// in words, starting with who.
func heatCell(who string, c *fleet.Cell, u metricUnit, lag float64, x, y, w, h int, dense bool) string {
	status, fill, value, mark := "none", colourNone, "-", ""
	tip := who + ": not run"
	if c != nil {
		status = string(c.Status)
		if c.Value > 0 {
			value = cellValue(c.Value * u.scale)
			tip = fmt.Sprintf("%s: %s %s, %.2fx the fleet median", who, u.show(c.Value), u.short, c.Ratio)
		} else {
			value = ""
			tip = who + ": no value"
		}
		switch c.Status {
		case fleet.StatusOK, fleet.StatusLag:
			fill = ratioColour(c.Ratio, lag)
		case fleet.StatusFail:
			fill = colourFail
		case fleet.StatusEnv:
			fill = colourEnv
		}
		if c.Status != fleet.StatusOK {
			mark = status
			tip += " (" + statusWords[c.Status] + ")"
		}
	}
	if value == "" && mark == "" {
		mark = status // ran and passed, but measured nothing
	}
	if dense {
		value = ""
		if mark != "" && status != string(fleet.StatusOK) {
			mark = mark[:1]
		} else {
			mark = ""
		}
	}
	fg := textOn(fill)
	var s strings.Builder
	fmt.Fprintf(&s, `<g class="cell %s"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"/>`, status, esc(tip), x, y, w, h, fill)
	switch {
	case value != "" && mark != "":
		fmt.Fprintf(&s, `<text x="%d" y="%d" class="val" fill="%s">%s</text><text x="%d" y="%d" class="mark" fill="%s">%s</text>`,
			x+w/2, y+h/2-2, fg, value, x+w/2, y+h-5, fg, mark)
	case value != "":
		fmt.Fprintf(&s, `<text x="%d" y="%d" class="val" fill="%s">%s</text>`, x+w/2, y+h/2+4, fg, value)
	case mark != "":
		fmt.Fprintf(&s, `<text x="%d" y="%d" class="mark" fill="%s">%s</text>`, x+w/2, y+h/2+4, fg, mark)
	}
	s.WriteString(`</g>`)
	return s.String()
}

// statusWords say a status for a tooltip or a table.
var statusWords = map[fleet.Status]string{fleet.StatusLag: "lag", fleet.StatusFail: "the test failed", fleet.StatusEnv: "a host did not answer"}

// cellValue is a value in its unit short enough for a cell, five
// characters at most: two decimals below 100 as the tables print them,
// fewer above, then k and M with three significant digits, so that a
// stalled pair's p99 of seconds stays inside its square rather than
// spilling over its neighbours. The cell's tooltip has it in full.
func cellValue(v float64) string {
	switch {
	case v < 99.995:
		return fmt.Sprintf("%.2f", v)
	case v < 999.95:
		return fmt.Sprintf("%.1f", v)
	case v < 99999.5:
		return fmt.Sprintf("%.0f", v)
	case v < 999.5e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v < 9.995e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v < 99.95e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v < 999.5e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	}
	return fmt.Sprintf("%.0e", v)
}

// suffixed reports whether a cell of m prints its value with k or M.
func suffixed(m fleet.Matrix, u metricUnit) bool {
	for _, row := range m.Cells {
		for _, c := range row {
			if c != nil && c.Value > 0 && strings.ContainsAny(cellValue(c.Value*u.scale), "kMe") {
				return true
			}
		}
	}
	return false
}

// legendKeys are the heat map's colours and what each means.
func legendKeys(lag float64) []struct{ fill, label string } {
	return []struct{ fill, label string }{
		{colourGood, "median or better"},
		{ratioColour((1+lag)/2, lag), fmt.Sprintf("%.2gx", (1+lag)/2)},
		{colourNear, fmt.Sprintf("%gx", lag)},
		{colourLag, fmt.Sprintf("lag: over %gx", lag)},
		{colourFail, "fail"},
		{colourEnv, "env: no answer"},
		{colourNone, "- not run"},
	}
}

// legendStep is the room a legend key takes: its swatch and its label,
// at about 7 px per character of the legend's 11 px font.
func legendStep(label string) int { return 26 + 7*len(label) }

func legendWidth(lag float64) int {
	w := 10
	for _, k := range legendKeys(lag) {
		w += legendStep(k.label)
	}
	return w
}

// heatLegend explains the colours and the unit under a heat map.
func heatLegend(b *strings.Builder, u metricUnit, lag float64, y int, dense, suffixes bool) {
	hint := ""
	if dense {
		hint = "; l, f, e: lag, fail, env; hover a cell for its value"
	}
	if suffixes {
		hint = "; k, M: thousand, million"
	}
	fmt.Fprintf(b, `<text x="10" y="%d" class="tick">values in %s; colour: against the fleet median%s</text>`, y, esc(u.long), hint)
	x := 10
	for _, k := range legendKeys(lag) {
		fmt.Fprintf(b, `<rect class="key" x="%d" y="%d" width="14" height="14" fill="%s" stroke="#999"/><text x="%d" y="%d" class="legend">%s</text>`,
			x, y+10, k.fill, x+18, y+21, esc(k.label))
		x += legendStep(k.label)
	}
}

// suspectsTable ranks the suspects with their evidence.
func suspectsTable(suspects []fleet.Suspect) string {
	var b strings.Builder
	b.WriteString("<h3>Suspects</h3>\n")
	if len(suspects) == 0 {
		b.WriteString(`<p class="passed">No suspects: no host or link is bad.</p>` + "\n")
		return b.String()
	}
	b.WriteString("<p>Worst first. The score is how many bad pairs (per metric) a suspect explains; the evidence gives RTT in microseconds and bandwidth in Gb/s (10^9 bit/s), each against the fleet median.</p>\n")
	b.WriteString(`<table class="suspects"><tr><th>rank</th><th>kind</th><th>suspect</th><th>score</th><th>evidence</th></tr>` + "\n")
	for i, s := range suspects {
		fmt.Fprintf(&b, `<tr><td>%d</td><td>%s</td><td class="failed">%s</td><td>%g</td><td style="text-align:left">`, i+1, esc(s.Kind), esc(s.Name), s.Score)
		for _, e := range s.Evidence {
			fmt.Fprintf(&b, "<div>%s</div>", esc(e))
		}
		b.WriteString("</td></tr>\n")
	}
	b.WriteString("</table>\n")
	return b.String()
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// setupTable lists the hosts whose own set-up failed, apart from the
// suspects: they judge no pair.
func setupTable(setup []SetupFinding) string {
	if len(setup) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h3>Host set-up</h3>\n<p>Hosts whose own configuration failed their tests (the locked-memory limit, no device, an op the device cannot do): fix the host, not the fabric. No suspect is named from these.</p>\n")
	b.WriteString(`<table class="suspects"><tr><th>host</th><th>runs</th><th>first error</th></tr>` + "\n")
	for _, f := range setup {
		fmt.Fprintf(&b, `<tr><td class="failed">%s</td><td>%d</td><td style="text-align:left">%s</td></tr>`+"\n", esc(f.Host), f.Runs, esc(f.Error))
	}
	b.WriteString("</table>\n")
	return b.String()
}
