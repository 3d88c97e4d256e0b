package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmarun/rdmarun/internal/junit"
)

// JUnit writes one testcase per matched test: a failure when it regressed
// or ran on other devices, skipped when it could not be judged, and each
// metric's values and interval as properties (latencies in seconds).
// Tests in one report only are failures too: CI must not pass a baseline
// comparison that compared nothing.
func JUnit(w io.Writer, c *Comparison) error {
	suite := junit.Suite{Name: "rdmarun compare " + c.New.Scenario, Timestamp: c.New.Started, Time: "0",
		Props: []junit.Property{{Name: "base", Value: c.Base.File}, {Name: "new", Value: c.New.File},
			{Name: "min_effect", Value: fmt.Sprint(c.Opts.MinEffect)}, {Name: "confidence", Value: fmt.Sprint(c.Opts.Confidence)}}}
	for _, r := range c.Runs {
		tc := junit.Case{Name: r.Key.String(), Classname: "compare." + r.Key.Case, Time: "0"}
		for _, m := range r.Metrics {
			scale := 1.0
			if m.Unit == "ns" {
				scale = 1e-9
			}
			ratio := fmt.Sprintf("%.4f", m.Ratio)
			if m.Low > 0 {
				ratio += fmt.Sprintf(" [%.4f, %.4f]", m.Low, m.High)
			}
			tc.Props = append(tc.Props,
				junit.Property{Name: m.Name + "_base", Value: fmt.Sprint(m.Base * scale)},
				junit.Property{Name: m.Name + "_new", Value: fmt.Sprint(m.New * scale)},
				junit.Property{Name: m.Name + "_ratio", Value: ratio},
				junit.Property{Name: m.Name + "_verdict", Value: string(m.Verdict)})
		}
		switch r.Verdict {
		case Regressed, Incomparable:
			tc.Failure = &junit.Result{Message: verdictText(r.Verdict) + ": " + why(r), Type: string(r.Verdict)}
			suite.Failures++
		case NotJudged:
			tc.Skipped = &junit.Result{Message: "not judged: " + why(r)}
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	for _, u := range c.Unmatched {
		suite.Cases = append(suite.Cases, junit.Case{Name: u.Key.String(), Classname: "compare." + u.Key.Case, Time: "0",
			Failure: &junit.Result{Message: "only in " + u.In + ": compare reports of the same scenario", Type: "unmatched"}})
		suite.Failures++
	}
	suite.Tests = len(suite.Cases)
	return junit.Write(w, junit.Suites{Name: suite.Name, Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: "0", Suites: []junit.Suite{suite}})
}

// why is what decided a test's verdict: the metrics that have it, or the
// test's own reason.
func why(r RunChange) string {
	s := ""
	for _, m := range r.Metrics {
		if m.Verdict != r.Verdict {
			continue
		}
		if s != "" {
			s += "; "
		}
		s += metricText(m.Name) + " " + strings.TrimSpace(changeText(m))
		if m.Reason != "" {
			s += " (" + m.Reason + ")"
		}
	}
	if s == "" {
		return r.Reason
	}
	return s
}
