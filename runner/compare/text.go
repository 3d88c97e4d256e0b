package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Text writes the comparison for people: regressions first, each test
// with its metrics, then what could not be matched.
func Text(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "base: %s (scenario %s, started %s)\n", c.Base.File, c.Base.Scenario, c.Base.Started)
	fmt.Fprintf(&b, "new:  %s (scenario %s, started %s)\n", c.New.File, c.New.Scenario, c.New.Started)
	fmt.Fprintf(&b, "a change counts when its %g%% interval lies beyond %g%% (%d bootstrap resamples); latencies are round trips (RTT)\n\n",
		c.Opts.Confidence*100, c.Opts.MinEffect*100, c.Opts.Resamples)
	for _, r := range c.Runs {
		fmt.Fprintf(&b, "%-22s %s  (runs: %d base, %d new%s)\n", verdictText(r.Verdict), r.Key, r.BaseRuns, r.NewRuns, methodText(r))
		if r.Reason != "" {
			fmt.Fprintf(&b, "    %s\n", r.Reason)
		}
		for _, m := range r.Metrics {
			fmt.Fprintf(&b, "    %-12s %s -> %s  %s  %s\n", metricText(m.Name), valueText(m.Unit, m.Base), valueText(m.Unit, m.New), changeText(m), verdictText(m.Verdict))
			if m.Reason != "" {
				fmt.Fprintf(&b, "                 %s\n", m.Reason)
			}
		}
	}
	s := c.Summary
	fmt.Fprintf(&b, "\n%d compared: %d regressed, %d improved, %d no significant change, %d not judged, %d incomparable; %d unmatched\n",
		s.Compared, s.Regressed, s.Improved, s.Unchanged, s.NotJudged, s.Incomparable, s.Unmatched)
	for _, u := range c.Unmatched {
		fmt.Fprintf(&b, "unmatched: %s is only in %s\n", u.Key, u.In)
	}
	for i, s := range c.Suspects {
		if i == 0 {
			b.WriteString("\nsuspects (what the regressed pairs blame):\n")
		}
		fmt.Fprintf(&b, "  %d. %s %s: %s\n", i+1, s.Kind, s.Name, strings.Join(s.Evidence, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes the comparison as its schema (rdmarun.compare/v1) lays out.
func JSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// methodText says where a test's intervals came from.
func methodText(r RunChange) string {
	for _, m := range r.Metrics {
		switch m.Method {
		case "runs":
			return "; intervals from the spread between runs"
		case "samples":
			return "; intervals from the samples within runs: with one run a side they cannot show how runs differ (repeat: 2 or more)"
		}
	}
	return ""
}

func verdictText(v Verdict) string { return strings.ReplaceAll(string(v), "_", " ") }

func metricText(name string) string {
	switch name {
	case "bw":
		return "bandwidth"
	case "msg_rate":
		return "message rate"
	}
	return "RTT " + name
}

// valueText prints a value in the unit people read it in: microseconds,
// Gb/s (10^9 bit/s), millions of messages a second.
func valueText(unit string, v float64) string {
	switch unit {
	case "ns":
		return fmt.Sprintf("%10.2f us", v/1e3)
	case "bytes_per_second":
		return fmt.Sprintf("%8.4f Gb/s", v*8/1e9)
	case "messages_per_second":
		return fmt.Sprintf("%7.0f msg/s", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

func changeText(m MetricChange) string {
	pct := func(r float64) string { return fmt.Sprintf("%+.1f%%", (r-1)*100) }
	if m.Verdict == NotJudged || m.Low == 0 {
		if m.Ratio == 0 {
			return fmt.Sprintf("%-24s", "")
		}
		return fmt.Sprintf("%-24s", pct(m.Ratio))
	}
	return fmt.Sprintf("%-24s", fmt.Sprintf("%s [%s, %s]", pct(m.Ratio), pct(m.Low), pct(m.High)))
}
