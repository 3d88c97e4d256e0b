package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/rdmarun/rdmarun/units"
)

// HTML writes a self-contained page: styles and charts inline (SVG drawn
// here, no scripts, no fetches), so it opens from a CI artifact store or
// an air-gapped host. Per case: latency percentiles and bandwidth against
// message size, one line per QP count and mode, and the verdicts. A
// fleet report has a heat map per metric and the suspects first, and its
// tables name each run's pair; it has no charts against message size,
// whose lines would mix every pair's runs.
//
// Above LargeFleetHosts a fleet's page has its groups instead (see
// largeFleetHTML), and no runs; HTML writes that page alone, without the
// groups' pages that WriteHTML writes beside it.
func HTML(w io.Writer, r *Report) error { return htmlPage(w, r, nil) }

// htmlPage writes the main page; links are a large fleet's group pages.
func htmlPage(w io.Writer, r *Report, links *htmlLinks) error {
	page := htmlDoc{R: r, SetupHeader: cmSetupHeader, Scaling: scalingHTML(r)}
	if r.Fleet.Large() {
		page.Fleet = largeFleetHTML(r, links)
		return pageTmpl.Execute(w, page)
	}
	if r.Fleet != nil {
		page.Fleet = fleetHTML(r)
	}
	for _, c := range r.Cases() {
		hc := htmlCase{Name: c.Name, Runs: c.Runs}
		if r.Fleet != nil {
			page.Cases = append(page.Cases, hc)
			continue
		}
		hc.Latency = chart("RTT latency (us) vs message size", c.Runs, func(run Run) []series {
			if run.Result == nil || run.Result.Latency == nil {
				return nil
			}
			l := run.Result.Latency.RTT
			return []series{{"p50", l.P50 / 1e3}, {"p99", l.P99 / 1e3}, {"p99.9", l.P999 / 1e3}}
		})
		hc.Bandwidth = chart("Bandwidth (Gb/s, 10^9 bit/s) vs message size", c.Runs, func(run Run) []series {
			if run.Result == nil || run.Result.Bandwidth == nil {
				return nil
			}
			var g float64
			for _, d := range run.Result.Bandwidth.Directions {
				g += d.Gbps()
			}
			return []series{{"Gb/s", g}}
		})
		page.Cases = append(page.Cases, hc)
	}
	return pageTmpl.Execute(w, page)
}

type htmlDoc struct {
	R           *Report
	SetupHeader []string
	Fleet       template.HTML // the heat maps and suspects of a fleet report
	Scaling     template.HTML // message rate and memory against QPs
	Cases       []htmlCase
}

type htmlCase struct {
	Name      string
	Runs      []Run
	Latency   template.HTML
	Bandwidth template.HTML
}

type series struct {
	name  string
	value float64
}

type point struct{ x, y float64 }

// chart draws one SVG line chart against message size: x is
// log2(size), one line per (qps, mode, metric). It returns "" when no
// run has the metric.
func chart(title string, runs []Run, metric func(Run) []series) template.HTML {
	lines := map[string][]point{}
	for _, run := range runs {
		for _, s := range metric(run) {
			key := fmt.Sprintf("%s qps=%d %s", s.name, run.Spec.QPs, run.Spec.Mode)
			lines[key] = append(lines[key], point{math.Log2(float64(run.Spec.Size)), s.value})
		}
	}
	return lineChart(title, lines, func(x float64) string { return units.FormatBytes(uint64(math.Exp2(x))) })
}

// lineChart draws lines of points whose x is a log2 value, labelling
// whole values of x with xTick. It returns "" for no lines.
func lineChart(title string, lines map[string][]point, xTick func(float64) string) template.HTML {
	if len(lines) == 0 {
		return ""
	}
	keys := make([]string, 0, len(lines))
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for k, pts := range lines {
		keys = append(keys, k)
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		for _, p := range pts {
			minX, maxX, maxY = math.Min(minX, p.x), math.Max(maxX, p.x), math.Max(maxY, p.y)
		}
	}
	sort.Strings(keys)
	if maxX == minX {
		maxX = minX + 1
	}
	if maxY == 0 {
		maxY = 1
	}
	// The legend's column widens for long line names (about 6.5 px a
	// character at its 11 px font) rather than clipping them.
	right := 170
	for _, k := range keys {
		right = max(right, len(k)*13/2+20)
	}
	const h, left, bottom, top = 300, 60, 40, 30
	w := 470 + right
	px := func(x float64) float64 { return left + (x-minX)/(maxX-minX)*float64(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-bottom-top) }
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d">`, template.HTMLEscapeString(title), w, h, w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s</text>`, left, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, left-6, py(y)+4, tick(y))
	}
	for x := math.Ceil(minX); x <= maxX; x++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>`, px(x), h-bottom+16, xTick(x))
	}
	for i, k := range keys {
		c := colors[i%len(colors)]
		var pts []string
		for _, p := range lines[k] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %.4g</title></circle>`, px(p.x), py(p.y), c, template.HTMLEscapeString(k), p.y)
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="legend" fill="%s">%s</text>`, w-right+10, top+14*i+10, c, template.HTMLEscapeString(k))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// tick prints an axis value short enough for the margin: no exponents.
func tick(y float64) string {
	if y >= 100 {
		return fmt.Sprintf("%.0f", y)
	}
	return fmt.Sprintf("%.3g", y)
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"size":    func(n int) string { return units.FormatBytes(uint64(n)) },
	"us":      func(ns float64) string { return units.Micros(ns) },
	"vals":    valuesText,
	"pair":    pairText,
	"where":   checkWhere,
	"sides":   runCategories,
	"cmSetup": cmSetupRows,
	"pct":     func(r float64) float64 { return 100 * r },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rdmarun: {{.R.Scenario}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f4f4f4}.passed{color:#176617}.failed,.error{color:#b00020;font-weight:bold}.skipped{color:#777}
svg.chart{border:1px solid #ddd;margin:0.5em 1em 0.5em 0}.axis{stroke:#444}.tick{font-size:11px;fill:#444}
.title{font-size:13px;font-weight:bold}.legend{font-size:11px}
table.setup caption{font-weight:bold;text-align:left}table.categories{display:inline-table;vertical-align:top;margin:0 1em 1em 0}table.categories caption{font-weight:bold;text-align:left}table.categories th,table.categories td.skipped{text-align:left}{{if .R.Fleet}}
svg.heatmap{border:1px solid #ddd;margin:0.5em 1em 0.5em 0}.heatmap .val{font-size:12px;text-anchor:middle}
.heatmap .mark{font-size:10px;font-weight:bold;text-anchor:middle}table.suspects td{vertical-align:top}{{end}}
</style></head><body>
<h1>rdmarun scenario {{.R.Scenario}}</h1>
<p>{{.R.File}} &middot; peer {{.R.Peer}} &middot; {{.R.Tool}} &middot; started {{.R.Started.UTC.Format "2006-01-02 15:04:05 UTC"}}</p>
<p class="summary">{{.R.Summary.Runs}} runs: <span class="passed">{{.R.Summary.Passed}} passed</span>,
<span class="failed">{{.R.Summary.Failed}} failed</span>, <span class="error">{{.R.Summary.Errors}} errors</span>,
<span class="skipped">{{.R.Summary.Skipped}} skipped</span>{{if .R.Stopped}}; stopped early: {{.R.Stopped}}{{end}}</p>
<p>Latency is the round trip (RTT) in microseconds; one-way is RTT/2 for send and write. Bandwidth is Gb/s (10^9 bit/s), first post to last completion.</p>
{{.Fleet}}{{with .R.Doctor}}<section class="doctor"><h2>Doctor</h2>
<p>A threshold failed: the checks of each end at fail, warn or cannot_tell (<code>rdmarun doctor</code> lists them all).</p>
{{range .}}<h3>{{.Host}}</h3>{{if .Error}}<p class="error">the doctor could not be asked: {{.Error}}</p>{{else}}<p>{{range $i, $d := .Devices}}{{if $i}}, {{end}}{{$d}}{{end}}: {{len .Findings}} findings, {{.OK}} ok, {{.NotApplicable}} not applicable</p>
{{if .Findings}}<table><tr><th>status</th><th>check</th><th>where</th><th>found</th><th>expected</th><th>cost</th><th>fix</th></tr>
{{range .Findings}}<tr style="text-align:left"><td class="{{if eq .Status.String "fail"}}failed{{else}}skipped{{end}}">{{.Status}}</td><td>{{.Name}}</td><td>{{where .}}</td><td>{{.Found}}</td><td>{{.Expected}}</td><td>{{.Cost}}</td><td>{{.Fix}}</td></tr>
{{end}}</table>{{end}}{{end}}
{{end}}</section>
{{end}}{{.Scaling}}{{range .Cases}}<section class="case"><h2>{{.Name}}</h2>
{{.Latency}}{{.Bandwidth}}
<table><tr>{{if $.R.Fleet}}<th>pair</th><th>round</th>{{end}}<th>size</th><th>measure</th><th>qps</th><th>mode</th><th>RTT p50 us</th><th>RTT p99 us</th><th>RTT p99.9 us</th><th>Gb/s</th><th>status</th><th>verdicts</th></tr>
{{range .Runs}}<tr>{{if $.R.Fleet}}<td>{{pair .Pair}}</td><td>{{with .Pair}}{{.Round}}{{else}}-{{end}}</td>{{end}}<td>{{size .Spec.Size}}</td><td>{{.Spec.Measure}}</td><td>{{.Spec.QPs}}</td><td>{{.Spec.Mode}}</td>
{{with .Result}}{{with .Latency}}<td>{{us .RTT.P50}}</td><td>{{us .RTT.P99}}</td><td>{{us .RTT.P999}}</td>{{else}}<td>-</td><td>-</td><td>-</td>{{end}}{{with .Bandwidth}}<td>{{range .Directions}}{{printf "%.3f " .Gbps}}{{end}}</td>{{else}}<td>-</td>{{end}}{{else}}<td>-</td><td>-</td><td>-</td><td>-</td>{{end}}
<td class="{{.Status}}">{{.Status}}</td><td style="text-align:left">{{range .Verdicts}}<div class="{{if .Passed}}passed{{else}}failed{{end}}">{{.Expr}}{{vals .}}</div>{{end}}{{if .Error}}<div class="error">{{.Error}}</div>{{end}}</td></tr>
{{end}}</table>{{with cmSetup .Runs}}<table class="setup"><caption>Connection set-up through rdma_cm, per QP as the requester timed it, microseconds</caption><tr>{{range $.SetupHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{range .Runs}}{{with .Result}}{{if .Receivers}}<table class="setup"><caption>Multicast to {{.Spec.Multicast}}, {{size .Spec.Size}}: what each receiver took of {{(index .Bandwidth.Directions 0).Messages}} messages sent</caption><tr><th>receiver</th><th>device</th><th>received</th><th>lost</th><th>loss %</th><th>Gb/s received</th></tr>
{{range .Receivers}}<tr><td style="text-align:left">{{if .Host}}{{.Host}}{{else}}-{{end}}</td><td>{{.Device}}</td><td>{{.Delivery.Received}}</td><td>{{.Delivery.Lost}}</td><td>{{printf "%.2f" (pct .Delivery.LossRatio)}}</td><td>{{printf "%.4f" .Delivery.ReceivedGbps}}</td></tr>
{{end}}</table>{{end}}{{end}}{{end}}{{range .Runs}}{{$run := .}}{{with sides .}}
<div class="counters"><h3>Counters, {{with $run.Pair}}{{pair .}} {{end}}{{$run.Label}}</h3>
{{range .}}<table class="categories"><caption>{{.Role}} {{.Device}}</caption>{{with .Absent}}<tr><td class="skipped">{{.}}</td></tr>{{end}}{{range .Rows}}<tr><th>{{.Name}}</th>{{if .Why}}<td class="skipped">not reported: {{.Why}}</td>{{else}}<td>{{.Value}}</td>{{end}}</tr>{{end}}</table>
{{end}}</div>{{end}}{{end}}</section>
{{end}}</body></html>
`))
