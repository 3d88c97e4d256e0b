package report

import (
	"fmt"
	"github.com/rdmarun/rdmarun/rdma"
	"io"
	"slices"
	"strings"

	"github.com/rdmarun/rdmarun/portstats"
)

// sideCategories is what one side's counters said in the categories'
// terms, as every format shows it: the values, the categories its
// drivers do not count with why, and the priorities whose pause moved.
type sideCategories struct {
	Role   string // requester or responder
	Device string
	// Absent says why the side sent no categories at all (an older
	// responder, or counters that were not read); Rows is then empty.
	Absent string
	Rows   []categoryRow
}

// categoryRow is one category, or one priority's pause, of a side.
type categoryRow struct {
	Name  string
	Value string // "not reported" for a category the side lacks
	Why   string // why it is not reported
	// Moved is a count other than zero: the rows a quiet text report
	// keeps, as a zero there only lengthens every run's lines.
	Moved bool
}

// pauseCategories are abbreviated together where a side lacks them all,
// as a port without pause counters does.
var pauseCategories = []string{portstats.PauseRx, portstats.PauseTx, portstats.PauseRxUs, portstats.PauseTxUs}

// runCategories returns the categories of each side of a run that has
// a result with sides, requester first.
func runCategories(run Run) []sideCategories {
	if run.Result == nil {
		return nil
	}
	var out []sideCategories
	for i, side := range run.Result.Sides {
		s := sideCategories{Role: SideRole(run.Result, i), Device: side.Device}
		c := side.Counters.Categories
		if c == nil {
			s.Absent = c.Why(portstats.Retransmits)
			out = append(out, s)
			continue
		}
		for _, cat := range portstats.CategoryNames {
			if v, ok := c.Values[cat]; ok {
				s.Rows = append(s.Rows, categoryRow{Name: cat, Value: fmt.Sprint(v), Moved: v != 0})
			} else {
				s.Rows = append(s.Rows, categoryRow{Name: cat, Value: "not reported", Why: c.Why(cat)})
			}
		}
		for _, p := range movedPause(c) {
			s.Rows = append(s.Rows, categoryRow{Name: "pause " + priorityName(p.Priority), Value: pauseText(p), Moved: true})
		}
		out = append(out, s)
	}
	return out
}

// SideRole names side i of res.Sides, which lists the requester first
// (a multicast run: the sender, then its receivers).
func SideRole(res *rdma.Result, i int) string {
	switch {
	case len(res.Receivers) > 0 && i == 0:
		return "sender"
	case len(res.Receivers) > 0:
		return "receiver"
	}
	switch i {
	case 0:
		return "requester"
	case 1:
		return "responder"
	}
	return fmt.Sprintf("side %d", i)
}

// movedPause returns the priorities on which some pause counted: the
// others are noise in a report, and a result may hold them all.
func movedPause(c *portstats.Categories) []portstats.PriorityPause {
	var out []portstats.PriorityPause
	for _, p := range c.Priorities {
		if p.RxFrames != 0 || p.TxFrames != 0 || nonZero(p.RxUs) || nonZero(p.TxUs) {
			out = append(out, p)
		}
	}
	return out
}

func nonZero(p *uint64) bool { return p != nil && *p != 0 }

func priorityName(p string) string {
	if p == "link" {
		return "link"
	}
	return "prio" + p
}

// pauseText is one priority's pause: frames each way, then the paused
// time where the driver keeps it.
func pauseText(p portstats.PriorityPause) string {
	s := fmt.Sprintf("rx %d, tx %d", p.RxFrames, p.TxFrames)
	var us []string
	if p.RxUs != nil {
		us = append(us, fmt.Sprintf("rx %dus", *p.RxUs))
	}
	if p.TxUs != nil {
		us = append(us, fmt.Sprintf("tx %dus", *p.TxUs))
	}
	if len(us) > 0 {
		s += " (paused " + strings.Join(us, ", ") + ")"
	}
	return s
}

// line is the side in one line of text: the values, the priorities
// whose pause moved, and the unreported categories by name (their
// reasons are in the JSON report, and in a threshold's error). Unless
// verbose it holds only the counts that moved, and is empty when none
// did: what a side does not count is the same on every run of a
// driver, and the JSON, JUnit and HTML reports keep it all.
func (s sideCategories) line(verbose bool) string {
	head := "counters " + s.Device + " (" + s.Role + "): "
	if s.Absent != "" {
		if !verbose {
			return ""
		}
		return head + s.Absent
	}
	var values, prios, unreported []string
	for _, r := range s.Rows {
		switch {
		case r.Why != "":
			unreported = append(unreported, r.Name)
		case !verbose && !r.Moved:
		case strings.HasPrefix(r.Name, "pause "):
			prios = append(prios, r.Name+": "+r.Value)
		default:
			values = append(values, r.Name+" "+r.Value)
		}
	}
	if !verbose {
		moved := slices.DeleteFunc([]string{strings.Join(values, ", "), strings.Join(prios, "; ")}, func(s string) bool { return s == "" })
		if len(moved) == 0 {
			return ""
		}
		return head + strings.Join(moved, "; ")
	}
	if !slices.ContainsFunc(pauseCategories, func(cat string) bool { return !slices.Contains(unreported, cat) }) {
		unreported = slices.DeleteFunc(unreported, func(cat string) bool { return slices.Contains(pauseCategories, cat) })
		unreported = append(unreported, "pause_*")
	}
	out := head + strings.Join(values, ", ")
	if len(values) == 0 {
		out = head + "none reported"
	}
	if len(prios) > 0 {
		out += "; " + strings.Join(prios, "; ")
	}
	if len(unreported) > 0 {
		out += " (not reported: " + strings.Join(unreported, ", ") + ")"
	}
	return out
}

// categoriesText writes a line per side of every run that has sides,
// each starting with indent and the run's label; unless verbose, only
// for the sides whose counts moved.
func categoriesText(w io.Writer, runs []Run, indent string, verbose bool) {
	for _, run := range runs {
		label := lineLabel(run)
		for _, s := range runCategories(run) {
			if line := s.line(verbose); line != "" {
				fmt.Fprintf(w, "%s%s: %s\n", indent, label, line)
			}
		}
	}
}

// categoryProperties are the sides' categories as JUnit properties,
// named ROLE_CATEGORY (requester_pause_rx_us), with the unreported ones
// listed, so CI can chart them without parsing text.
func categoryProperties(run Run) []junitProperty {
	var p []junitProperty
	for _, s := range runCategories(run) {
		if s.Absent != "" {
			p = append(p, prop(s.Role+"_categories", "none: "+s.Absent))
			continue
		}
		var unreported []string
		for _, r := range s.Rows {
			switch {
			case r.Why != "":
				unreported = append(unreported, r.Name)
			case strings.HasPrefix(r.Name, "pause "):
				p = append(p, prop(s.Role+"_"+strings.ReplaceAll(r.Name, " ", "_"), r.Value))
			default:
				p = append(p, prop(s.Role+"_"+r.Name, r.Value))
			}
		}
		if len(unreported) > 0 {
			p = append(p, prop(s.Role+"_unreported", strings.Join(unreported, ", ")))
		}
	}
	return p
}
