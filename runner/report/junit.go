package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/internal/junit"
	"github.com/rdmarun/rdmarun/rdma"
)

// The JUnit XML shapes, shared with rdmarun compare's JUnit.
type (
	junitSuites   = junit.Suites
	junitSuite    = junit.Suite
	junitCase     = junit.Case
	junitProperty = junit.Property
	junitResult   = junit.Result
)

func prop(name, value string) junitProperty { return junitProperty{Name: name, Value: value} }

// JUnit writes one testsuite per case and one testcase per run (case x
// size x qps x mode, and in a fleet run x pair x attempt, the pair in the
// name). Failures quote the threshold and the values it saw, and carry
// the doctor's findings on both ends in their system-out. A fleet
// run's suspects go into every suite's properties and system-out, where
// CI shows them beside the failing pairs. Above LargeFleetHosts a fleet
// has one testcase per host instead (see junitLarge).
func JUnit(w io.Writer, r *Report) error {
	if r.Fleet.Large() {
		return junitLarge(w, r)
	}
	out := junitSuites{Name: r.Scenario, Time: seconds(r.Finished.Sub(r.Started).Seconds())}
	for _, c := range r.Cases() {
		s := junitSuite{Name: r.Scenario + "." + c.Name, Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05Z")}
		s.Props = []junitProperty{prop("peer", r.Peer), prop("tool", r.Tool)}
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
	return junit.Write(w, out)
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

// properties are a run's settings and measured values, units in names.
func properties(run Run) []junitProperty {
	s := run.Spec
	p := []junitProperty{
		prop("op", s.Op.String()), prop("measure", s.Measure.String()), prop("mode", s.Mode.String()), prop("qp_type", s.QPType.String()),
		prop("size_bytes", fmt.Sprint(s.Size)), prop("qps", fmt.Sprint(s.QPs)), prop("iterations", fmt.Sprint(s.Iterations)),
		prop("duration_seconds", fmt.Sprint(time.Duration(s.Duration).Seconds())),
	}
	if res := run.Result; res != nil {
		p = append(p, prop("path_mtu_bytes", fmt.Sprint(res.Spec.QP.MTU)), prop("device", res.Requester.Device), prop("peer_device", res.Responder.Device))
		if l := res.Latency; l != nil {
			p = append(p,
				prop("rtt_p50_seconds", fmt.Sprint(l.RTT.P50/1e9)),
				prop("rtt_p99_seconds", fmt.Sprint(l.RTT.P99/1e9)),
				prop("rtt_p99_9_seconds", fmt.Sprint(l.RTT.P999/1e9)))
		}
		if b := res.Bandwidth; b != nil {
			for i, d := range b.Directions {
				p = append(p, prop(fmt.Sprintf("direction%d", i), d.From+"->"+d.To),
					prop(fmt.Sprintf("direction%d_bytes_per_second", i), fmt.Sprint(d.BytesPerSecond)))
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
				prop(step.name+"_p50_seconds", fmt.Sprint(step.s.P50/1e9)),
				prop(step.name+"_p99_seconds", fmt.Sprint(step.s.P99/1e9)),
				prop(step.name+"_max_seconds", fmt.Sprint(step.s.Max/1e9)))
		}
		p = append(p, prop("connect_parallel", fmt.Sprint(c.Parallel)),
			prop("connections_per_second", fmt.Sprint(c.PerSecond)))
	}
	p = append(p, categoryProperties(run)...)
	for _, v := range run.Verdicts {
		p = append(p, prop("threshold", fmt.Sprintf("%s => %v", v.Expr, v.Passed)))
	}
	return p
}

func sortStrings(s []string) { slices.Sort(s) }

// pairProperties place a fleet run: its hosts, round and attempt.
func pairProperties(p *PairRun) []junitProperty {
	return []junitProperty{prop("initiator", p.A), prop("responder", p.B), prop("round", fmt.Sprint(p.Round)), prop("attempt", fmt.Sprint(p.Attempt))}
}

// fleetProperties say how the fleet ran and name the ranked suspects,
// one property each, or that there is none, so a reader of the
// properties alone knows.
func fleetProperties(r *Report) []junitProperty {
	f := r.Fleet
	p := []junitProperty{prop("hosts", fmt.Sprint(len(f.Hosts))), prop("pattern", string(f.Pattern)), prop("rounds", fmt.Sprint(len(f.Rounds))),
		prop("wall_seconds", seconds(wallSeconds(f))), prop("serial_seconds", seconds(serialSeconds(r)))}
	if len(f.Suspects) == 0 {
		return append(p, prop("suspects", "none"))
	}
	for i, s := range f.Suspects {
		p = append(p, prop(fmt.Sprintf("suspect_%d", i+1), fmt.Sprintf("%s %s, score %g", s.Kind, s.Name, s.Score)))
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
