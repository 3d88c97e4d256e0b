package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

// JUnit XML, written by hand rather than with a JUnit library: each
// testcase carries its own properties (the settings and measured values),
// which the common library types do not allow.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Failures  int             `xml:"failures,attr"`
	Errors    int             `xml:"errors,attr"`
	Skipped   int             `xml:"skipped,attr"`
	Time      string          `xml:"time,attr"`
	Timestamp string          `xml:"timestamp,attr"`
	Props     []junitProperty `xml:"properties>property,omitempty"`
	Cases     []junitCase     `xml:"testcase"`
	SystemOut string          `xml:"system-out,omitempty"`
}

type junitCase struct {
	Name      string          `xml:"name,attr"`
	Classname string          `xml:"classname,attr"`
	Time      string          `xml:"time,attr"`
	Props     []junitProperty `xml:"properties>property,omitempty"`
	Failure   *junitResult    `xml:"failure,omitempty"`
	Error     *junitResult    `xml:"error,omitempty"`
	Skipped   *junitResult    `xml:"skipped,omitempty"`
	SystemOut string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitResult struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// JUnit writes one testsuite per case and one testcase per run (case x
// size x qps x mode, and in a fleet run x pair x attempt, the pair in the
// name). Failures quote the threshold and the values it saw, and carry
// the doctor's findings on both ends in their system-out. A fleet
// run's suspects go into every suite's properties and system-out, where
// CI shows them beside the failing pairs.
func JUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: r.Scenario, Time: seconds(r.Finished.Sub(r.Started).Seconds())}
	for _, c := range r.Cases() {
		s := junitSuite{Name: r.Scenario + "." + c.Name, Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05Z")}
		s.Props = []junitProperty{{"peer", r.Peer}, {"tool", r.Tool}}
		if r.Fleet != nil {
			s.Props = append(s.Props, fleetProperties(r)...)
			s.SystemOut = suspectsOut(r.Fleet)
		}
		var total float64
		for _, run := range c.Runs {
			tc := junitCase{Name: run.Label(), Classname: r.Scenario + "." + c.Name, Time: seconds(run.Seconds), Props: properties(run)}
			if run.Pair != nil {
				tc.Name += " " + pairText(run.Pair)
				tc.Props = append(tc.Props, pairProperties(run.Pair)...)
			}
			total += run.Seconds
			switch run.Status {
			case Failed:
				var msgs []string
				for _, v := range run.Verdicts {
					if !v.Passed {
						msgs = append(msgs, v.Expr+valuesText(v))
					}
				}
				tc.Failure = &junitResult{Message: "threshold failed: " + strings.Join(msgs, "; "), Type: "threshold", Body: strings.Join(msgs, "\n")}
				if len(r.Doctor) > 0 {
					// Beside the failure, where CI shows it: what
					// the doctor found on both ends.
					var b strings.Builder
					doctorText(&b, r.Doctor, "")
					tc.SystemOut = "doctor (checks at fail, warn or cannot_tell):\n" + b.String()
				}
				s.Failures++
			case Errored:
				tc.Error = &junitResult{Message: run.Error, Type: "run"}
				s.Errors++
			case Skipped:
				tc.Skipped = &junitResult{Message: "not run: " + r.Stopped}
				s.Skipped++
			}
			s.Cases = append(s.Cases, tc)
			s.Tests++
		}
		s.Time = seconds(total)
		out.Suites = append(out.Suites, s)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

// properties are a run's settings and measured values, units in names.
func properties(run Run) []junitProperty {
	s := run.Spec
	p := []junitProperty{
		{"op", s.Op.String()}, {"measure", s.Measure.String()}, {"mode", s.Mode.String()}, {"qp_type", s.QPType.String()},
		{"size_bytes", fmt.Sprint(s.Size)}, {"qps", fmt.Sprint(s.QPs)}, {"iterations", fmt.Sprint(s.Iterations)},
		{"duration_seconds", fmt.Sprint(time.Duration(s.Duration).Seconds())},
	}
	if res := run.Result; res != nil {
		p = append(p, junitProperty{"path_mtu_bytes", fmt.Sprint(res.Spec.QP.MTU)}, junitProperty{"device", res.Requester.Device}, junitProperty{"peer_device", res.Responder.Device})
		if l := res.Latency; l != nil {
			p = append(p,
				junitProperty{"rtt_p50_seconds", fmt.Sprint(l.RTT.P50 / 1e9)},
				junitProperty{"rtt_p99_seconds", fmt.Sprint(l.RTT.P99 / 1e9)},
				junitProperty{"rtt_p99_9_seconds", fmt.Sprint(l.RTT.P999 / 1e9)})
		}
		if b := res.Bandwidth; b != nil {
			for i, d := range b.Directions {
				p = append(p, junitProperty{fmt.Sprintf("direction%d", i), d.From + "->" + d.To},
					junitProperty{fmt.Sprintf("direction%d_bytes_per_second", i), fmt.Sprint(d.BytesPerSecond)})
			}
		}
	}
	if res := run.Result; res != nil && res.Connect != nil {
		c := res.Connect
		for _, step := range []struct {
			name string
			s    rdma.Summary
		}{{"resolve_addr", c.ResolveAddr}, {"resolve_route", c.ResolveRoute}, {"connect", c.Connect}, {"setup", c.Total}} {
			p = append(p,
				junitProperty{step.name + "_p50_seconds", fmt.Sprint(step.s.P50 / 1e9)},
				junitProperty{step.name + "_p99_seconds", fmt.Sprint(step.s.P99 / 1e9)},
				junitProperty{step.name + "_max_seconds", fmt.Sprint(step.s.Max / 1e9)})
		}
		p = append(p, junitProperty{"connect_parallel", fmt.Sprint(c.Parallel)},
			junitProperty{"connections_per_second", fmt.Sprint(c.PerSecond)})
	}
	p = append(p, categoryProperties(run)...)
	for _, v := range run.Verdicts {
		p = append(p, junitProperty{"threshold", fmt.Sprintf("%s => %v", v.Expr, v.Passed)})
	}
	return p
}

func sortStrings(s []string) { slices.Sort(s) }

// pairProperties place a fleet run: its hosts, round and attempt.
func pairProperties(p *PairRun) []junitProperty {
	return []junitProperty{{"initiator", p.A}, {"responder", p.B}, {"round", fmt.Sprint(p.Round)}, {"attempt", fmt.Sprint(p.Attempt)}}
}

// fleetProperties say how the fleet ran and name the ranked suspects,
// one property each, or that there is none, so a reader of the
// properties alone knows.
func fleetProperties(r *Report) []junitProperty {
	f := r.Fleet
	p := []junitProperty{{"hosts", fmt.Sprint(len(f.Hosts))}, {"pattern", string(f.Pattern)}, {"rounds", fmt.Sprint(len(f.Rounds))},
		{"wall_seconds", seconds(wallSeconds(f))}, {"serial_seconds", seconds(serialSeconds(r))}}
	if len(f.Suspects) == 0 {
		return append(p, junitProperty{"suspects", "none"})
	}
	for i, s := range f.Suspects {
		p = append(p, junitProperty{fmt.Sprintf("suspect_%d", i+1), fmt.Sprintf("%s %s, score %g", s.Kind, s.Name, s.Score)})
	}
	return p
}

// suspectsOut is the suspects with their evidence, as the text report
// lists them.
func suspectsOut(f *Fleet) string {
	var b strings.Builder
	suspectsText(&b, f.Suspects)
	return strings.TrimPrefix(b.String(), "\n")
}
