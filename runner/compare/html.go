package compare

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

// HTML writes a self-contained page (inline styles and SVG, no scripts):
// every matched test, regressions first, base and new side by side per
// metric, and each interval drawn against the smallest effect.
func HTML(w io.Writer, c *Comparison) error {
	return htmlTmpl.Execute(w, c)
}

var htmlTmpl = template.Must(template.New("compare").Funcs(template.FuncMap{
	"value":   func(unit string, v float64) string { return strings.TrimSpace(valueText(unit, v)) },
	"change":  func(m MetricChange) string { return strings.TrimSpace(changeText(m)) },
	"verdict": verdictText,
	"method":  methodText,
	"metric":  metricText,
	"bar":     func(m MetricChange, minEffect float64) template.HTML { return intervalBar(m, minEffect) },
	"pct":     func(f float64) string { return fmt.Sprintf("%g%%", f*100) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rdmarun compare: {{.New.File}} against {{.Base.File}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td{white-space:nowrap}td.name{text-align:left}small{white-space:normal}
.regressed,.incomparable{color:#b00020;font-weight:bold}.improved{color:#176617;font-weight:bold}.no_significant_change{color:#222}.not_judged{color:#777}
svg.bar{vertical-align:middle}.band{fill:#e8eef8}.one{stroke:#444}.iv{stroke:#333;stroke-width:3}.dot{fill:#333}.tick{font-size:10px;fill:#555}
</style></head><body>
<h1>rdmarun compare</h1>
<table><tr><th></th><th>file</th><th>scenario</th><th>started</th></tr>
<tr><td class="name">base</td><td class="name">{{.Base.File}}</td><td class="name">{{.Base.Scenario}}</td><td>{{.Base.Started}}</td></tr>
<tr><td class="name">new</td><td class="name">{{.New.File}}</td><td class="name">{{.New.Scenario}}</td><td>{{.New.Started}}</td></tr></table>
<p>A change counts when its {{pct .Opts.Confidence}} interval (bootstrap, {{.Opts.Resamples}} resamples) lies wholly beyond the smallest effect, {{pct .Opts.MinEffect}} (the shaded band).
Latencies are round trips (RTT) in microseconds; bandwidth is Gb/s (10^9 bit/s).</p>
<p class="summary">{{.Summary.Compared}} compared: <span class="regressed">{{.Summary.Regressed}} regressed</span>, <span class="improved">{{.Summary.Improved}} improved</span>,
{{.Summary.Unchanged}} no significant change, <span class="not_judged">{{.Summary.NotJudged}} not judged</span>, <span class="incomparable">{{.Summary.Incomparable}} incomparable</span>; {{.Summary.Unmatched}} unmatched</p>
{{with .Suspects}}<h2 class="regressed">Suspects</h2><p>What the regressed pairs blame: a host whose pairs regressed with most of its partners, else each path.</p>
<table><tr><th>kind</th><th>name</th><th>evidence</th></tr>
{{range .}}<tr><td class="name">{{.Kind}}</td><td class="name">{{.Name}}</td><td class="name">{{range .Evidence}}<div>{{.}}</div>{{end}}</td></tr>
{{end}}</table>{{end}}{{range .Runs}}<h2 class="{{.Verdict}}">{{verdict .Verdict}}: {{.Key}}</h2>
<p>runs: {{.BaseRuns}} base, {{.NewRuns}} new{{method .}}{{if .Reason}}; {{.Reason}}{{end}}</p>
{{if .Metrics}}<table><tr><th>metric</th><th>base</th><th>new</th><th>change [interval]</th><th>new/base</th><th>verdict</th></tr>
{{range .Metrics}}<tr><td class="name">{{metric .Name}}</td><td>{{value .Unit .Base}}</td><td>{{value .Unit .New}}</td><td>{{change .}}</td><td>{{bar . $.Opts.MinEffect}}</td><td class="{{.Verdict}}">{{verdict .Verdict}}{{if .Reason}}<br><small>{{.Reason}}</small>{{end}}</td></tr>
{{end}}</table>{{end}}
{{end}}{{with .Unmatched}}<h2 class="incomparable">Unmatched</h2><table><tr><th>test</th><th>only in</th></tr>
{{range .}}<tr><td class="name">{{.Key}}</td><td>{{.In}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))

// intervalBar draws new/base on a ratio axis: the smallest effect's band
// around 1, a line at 1, the interval and the point estimate.
func intervalBar(m MetricChange, minEffect float64) template.HTML {
	const w, h, pad = 260, 28, 10
	if m.Ratio <= 0 || math.IsInf(m.Ratio, 0) || math.IsNaN(m.Ratio) {
		return ""
	}
	lo, hi := math.Min(1-minEffect, m.Ratio), math.Max(1+minEffect, m.Ratio)
	if m.Low > 0 {
		lo, hi = math.Min(lo, m.Low), math.Max(hi, m.High)
	}
	span := hi - lo
	lo, hi = lo-span*0.1, hi+span*0.1
	x := func(r float64) float64 { return pad + (r-lo)/(hi-lo)*(w-2*pad) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="bar" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="new/base %.3f">`, w, h, w, h, m.Ratio)
	fmt.Fprintf(&b, `<rect class="band" x="%.1f" y="2" width="%.1f" height="14"/>`, x(1-minEffect), x(1+minEffect)-x(1-minEffect))
	fmt.Fprintf(&b, `<line class="one" x1="%.1f" y1="0" x2="%.1f" y2="18"/>`, x(1), x(1))
	if m.Low > 0 {
		fmt.Fprintf(&b, `<line class="iv" x1="%.1f" y1="9" x2="%.1f" y2="9"/>`, x(m.Low), x(m.High))
	}
	fmt.Fprintf(&b, `<circle class="dot" cx="%.1f" cy="9" r="3.5"/>`, x(m.Ratio))
	fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="27" text-anchor="start">%.3g</text><text class="tick" x="%.1f" y="27" text-anchor="middle">1</text><text class="tick" x="%.1f" y="27" text-anchor="end">%.3g</text>`,
		float64(pad), lo, x(1), float64(w-pad), hi)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
