package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmarun/rdmarun/fleet"
)

// htmlPageBudget bounds every group page of a large fleet's HTML: a
// group's rows go on to a next page of the group before one would pass
// it, so no page is over it whatever the grouping (a rack of 200 hosts
// at 2,000 hosts is 400,000 rows). Headless Chromium took 2.5 s to parse
// and dump a 1 MB group page of 1,000 hosts, and 7.8 s for 2.2 MB (on
// this project's 2-core test machine, TestLargeFleetHTMLInChromium), so
// 1 MiB keeps a page well inside 10 s. The main page is bounded by
// MaxGroups instead (see largeFleetHTML).
const htmlPageBudget = 1 << 20

// pageReserve is room kept on a page for what closes it: the table's
// end, the link to the next page, the document's end.
const pageReserve = 1024

// WriteHTML writes r's HTML report at path and returns the files it
// wrote, path first. At or below LargeFleetHosts that is path alone,
// as HTML writes it. Above, path is the main page, and each group gets
// pages of its own beside it, named after path: fleet.html has
// fleet-group-01.html, and fleet-group-01-2.html when the group's rows
// go on to a second page.
func WriteHTML(path string, r *Report) ([]string, error) {
	if r.Fleet == nil || !r.Fleet.Large() {
		return []string{path}, WriteFile(path, func(w io.Writer) error { return HTML(w, r) })
	}
	dir, base := filepath.Split(path)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	links, pages, err := writeGroupPages(dir, stem, base, r)
	if err != nil {
		return pages, err
	}
	maps, err := writeMapPages(dir, stem, base, r, links)
	pages = append(pages, maps...)
	if err != nil {
		return pages, err
	}
	err = WriteFile(path, func(w io.Writer) error { return htmlPage(w, r, links) })
	return append([]string{path}, pages...), err
}

// WriteFile creates the file at path and writes it with write, the
// error naming the file: one way for every output file.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeMapPages gives each heat map a page of its own, stem-map-01.html
// and on, when together they are over mainMapsBudget.
func writeMapPages(dir, stem, main string, r *Report, links *htmlLinks) ([]string, error) {
	maps := links.groupMaps(r, groupsOf(r.Fleet))
	total := 0
	for _, m := range maps {
		total += len(m)
	}
	if total <= mainMapsBudget {
		return nil, nil
	}
	var files []string
	for i, m := range maps {
		name := fmt.Sprintf("%s-map-%02d.html", stem, i+1)
		links.mapFiles = append(links.mapFiles, name)
		path := filepath.Join(dir, name)
		files = append(files, path)
		err := WriteFile(path, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rdmarun: %s: %s</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}svg.heatmap{border:1px solid #ddd}.axis{stroke:#444}.tick{font-size:11px;fill:#444}.title{font-size:13px;font-weight:bold}.legend{font-size:11px}.heatmap .val{font-size:12px;text-anchor:middle}.heatmap .mark{font-size:10px;font-weight:bold;text-anchor:middle}</style></head><body>
<p><a href="%s">the fleet report</a></p>
%s
</body></html>
`, esc(r.Scenario), esc(r.Fleet.Matrices[i].Metric), esc(main), m)
			return err
		})
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// groupPageName is the file of a group's page (part from 1).
func groupPageName(stem string, g, part int) string {
	if part == 1 {
		return fmt.Sprintf("%s-group-%02d.html", stem, g+1)
	}
	return fmt.Sprintf("%s-group-%02d-%d.html", stem, g+1, part)
}

// writeGroupPages writes every group's pages into dir and returns the
// links the main page (main, in the same dir) makes to them.
func writeGroupPages(dir, stem, main string, r *Report) (*htmlLinks, []string, error) {
	f := r.Fleet
	groups := groupsOf(f)
	links := &htmlLinks{group: make([]string, len(groups)), host: make([]string, len(f.Hosts))}
	var files []string
	for g, grp := range groups {
		links.group[g] = groupPageName(stem, g, 1)
		gp := &groupPager{r: r, dir: dir, stem: stem, main: main, g: g, grp: grp, links: links}
		err := gp.write()
		files = append(files, gp.files...)
		if err != nil {
			return nil, files, err
		}
	}
	return links, files, nil
}

// groupPager writes one group's pages, a page at a time.
type groupPager struct {
	r               *Report
	dir, stem, main string
	g               int
	grp             hostGroup
	links           *htmlLinks
	part            int // the page being written, from 1
	sections        int // initiators begun on it
	buf             bytes.Buffer
	files           []string
}

func (p *groupPager) write() error {
	f := p.r.Fleet
	p.start()
	for _, h := range p.grp.Hosts {
		heading := fmt.Sprintf(`<h2 id="h%d">%s initiates</h2>`+"\n", h, esc(f.Hosts[h].Name))
		rows := p.rows(h)
		first := "<p>No pair with this initiator ran.</p>\n"
		if len(rows) > 0 {
			first = p.tableHead() + rows[0]
		}
		if err := p.fit(len(heading) + len(first)); err != nil {
			return err
		}
		p.buf.WriteString(heading)
		p.hostLink(h)
		if len(rows) == 0 {
			p.buf.WriteString(first)
			continue
		}
		p.buf.WriteString(p.tableHead())
		for _, row := range rows {
			if p.buf.Len()+len(row)+pageReserve > htmlPageBudget {
				p.buf.WriteString("</table>\n")
				if err := p.flush(true); err != nil {
					return err
				}
				p.start()
				fmt.Fprintf(&p.buf, "<h2>%s initiates (continued)</h2>\n%s", esc(f.Hosts[h].Name), p.tableHead())
			}
			p.buf.WriteString(row)
		}
		p.buf.WriteString("</table>\n")
	}
	return p.flush(false)
}

// fit goes on to the group's next page when this one has a section
// already and n more bytes would pass the budget; a page's first
// section goes on it whatever its size, its rows then splitting it.
func (p *groupPager) fit(n int) error {
	if p.sections > 0 && p.buf.Len()+n+pageReserve > htmlPageBudget {
		if err := p.flush(true); err != nil {
			return err
		}
		p.start()
	}
	p.sections++
	return nil
}

func (p *groupPager) hostLink(h int) {
	p.links.host[h] = groupPageName(p.stem, p.g, p.part) + fmt.Sprintf("#h%d", h)
}

// start opens the group's next page.
func (p *groupPager) start() {
	p.part++
	p.buf.Reset()
	p.sections = 0
	f := p.r.Fleet
	first, last := f.Hosts[p.grp.Hosts[0]].Name, f.Hosts[p.grp.Hosts[len(p.grp.Hosts)-1]].Name
	fmt.Fprintf(&p.buf, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rdmarun: %s: group %s</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f4f4f4}td:first-child{text-align:left}.lag,.fail{color:#b00020;font-weight:bold}.env{color:#555;font-weight:bold}
</style></head><body>
<p><a href="%s">the fleet report</a></p>
<h1>Group %s of scenario %s, page %d</h1>
<p>%d hosts, %s to %s. Every pair whose initiator is in the group, as it ran against each responder: per metric its worst value, marked lag, fail or env when not ok (lag: over %gx worse than the fleet median; fail: the test failed; env: a host did not answer), and its ratio to the fleet median, above 1 worse. Latency is the round trip in microseconds, bandwidth Gb/s (10^9 bit/s); - where the pair did not run or measured nothing.</p>
`, esc(p.r.Scenario), esc(p.grp.Name), esc(p.main), esc(p.grp.Name), esc(p.r.Scenario), p.part,
		len(p.grp.Hosts), esc(first), esc(last), lagFactorOf(f))
}

// flush writes the page, with a link to the group's next one if more
// follows.
func (p *groupPager) flush(more bool) error {
	if more {
		fmt.Fprintf(&p.buf, "<p><a href=\"%s\">continued on page %d</a></p>\n", groupPageName(p.stem, p.g, p.part+1), p.part+1)
	}
	p.buf.WriteString("</body></html>\n")
	name := groupPageName(p.stem, p.g, p.part)
	path := filepath.Join(p.dir, name)
	p.files = append(p.files, path)
	return WriteFile(path, func(w io.Writer) error { _, err := w.Write(p.buf.Bytes()); return err })
}

// tableHead heads an initiator's table: the responder, then a value and
// a ratio per metric.
func (p *groupPager) tableHead() string {
	var b strings.Builder
	b.WriteString(`<table><tr><th rowspan="2">responder</th>`)
	for _, m := range p.r.Fleet.Matrices {
		fmt.Fprintf(&b, `<th colspan="2">%s</th>`, esc(m.Metric))
	}
	b.WriteString("</tr>\n<tr>")
	for _, m := range p.r.Fleet.Matrices {
		fmt.Fprintf(&b, "<th>%s</th><th>x median</th>", esc(unitOf(m).short))
	}
	b.WriteString("</tr>\n")
	return b.String()
}

// rows are initiator h's pairs, one row per responder that any metric
// has a cell for. Rows leave their end tags out, as HTML allows, which
// makes a group's page of 32 x 2,000 pairs a third smaller.
func (p *groupPager) rows(h int) []string {
	f := p.r.Fleet
	var rows []string
	var b strings.Builder
	for r := range f.Hosts {
		cells := make([]*fleet.Cell, len(f.Matrices))
		any := false
		for mi, m := range f.Matrices {
			if h < len(m.Cells) && r < len(m.Cells[h]) && m.Cells[h][r] != nil {
				cells[mi], any = m.Cells[h][r], true
			}
		}
		if !any {
			continue
		}
		b.Reset()
		b.WriteString("<tr><td>" + esc(f.Hosts[r].Name))
		for mi, c := range cells {
			u := unitOf(f.Matrices[mi])
			switch {
			case c == nil:
				b.WriteString("<td>-<td>-")
			case c.Status == fleet.StatusOK:
				b.WriteString("<td>" + valueOrDash(c, u) + "<td>" + ratioOrDash(c))
			default:
				fmt.Fprintf(&b, "<td class=%s>%s %s<td class=%s>%s", c.Status, valueOrDash(c, u), c.Status, c.Status, ratioOrDash(c))
			}
		}
		b.WriteString("\n")
		rows = append(rows, b.String())
	}
	return rows
}
