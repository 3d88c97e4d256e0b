package runner

import (
	"slices"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

// TestOneOrBoth: measure and mode read a value, a list or both through
// one parser, and a value listed twice is an error naming it, whether it
// was written twice or also came in with both.
func TestOneOrBoth(t *testing.T) {
	const head = "cases:\n  - name: c\n    op: send\n"
	for _, tc := range []struct {
		name     string
		lines    string // the case's measure: and mode: lines
		measures []rdma.Measure
		modes    []rdma.Mode
		err      string // the whole error, when it does not load
	}{
		{name: "one of each", lines: "    measure: latency\n    mode: event\n",
			measures: []rdma.Measure{rdma.MeasureLatency}, modes: []rdma.Mode{rdma.ModeEvent}},
		{name: "both of each", lines: "    measure: both\n    mode: both\n",
			measures: []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth}, modes: []rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent}},
		{name: "measures sorted, modes as written", lines: "    measure: [bandwidth, latency]\n    mode: [event, busy_poll]\n",
			measures: []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth}, modes: []rdma.Mode{rdma.ModeEvent, rdma.ModeBusyPoll}},
		{name: "comma text", lines: "    measure: latency, bandwidth\n",
			measures: []rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth}, modes: []rdma.Mode{rdma.ModeBusyPoll}},
		{name: "measure twice", lines: "    measure: [latency, latency]\n",
			err: "f.yaml:4:24: measure: latency is listed twice; list each measure once"},
		{name: "mode twice", lines: "    measure: latency\n    mode: [event, event]\n",
			err: "f.yaml:5:19: mode: event is listed twice; list each mode once"},
		{name: "measure within both", lines: "    measure: [both, bandwidth]\n",
			err: "f.yaml:4:21: measure: bandwidth is listed twice (both is latency and bandwidth); list each measure once"},
		{name: "mode before both", lines: "    measure: latency\n    mode: [event, both]\n",
			err: "f.yaml:5:19: mode: event is listed twice (both is busy_poll and event); list each mode once"},
		{name: "twice in comma text", lines: "    measure: latency\n    mode: event, event\n",
			err: "f.yaml:5:11: mode: event is listed twice; list each mode once"},
		{name: "unknown measure", lines: "    measure: latncy\n",
			err: `f.yaml:4:14: measure: "latncy" is not a measure; write latency, bandwidth, or both; did you mean "latency"?`},
		{name: "unknown mode", lines: "    measure: latency\n    mode: [busy_poll, evnt]\n",
			err: `f.yaml:5:23: mode: "evnt" is not a mode; write busy_poll, event, or both; did you mean "event"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseWant(t, head+tc.lines, nil, tc.err)
			if sc == nil {
				return
			}
			c := sc.Cases[0]
			if !slices.Equal(c.Measures, tc.measures) || !slices.Equal(c.Modes, tc.modes) {
				t.Errorf("measures %v, modes %v; want %v, %v", c.Measures, c.Modes, tc.measures, tc.modes)
			}
		})
	}
}

// TestOneOrBothFlags: rdmarun bench's flags go through the same parser,
// and its errors name the flag.
func TestOneOrBothFlags(t *testing.T) {
	_, err := Single("bench", []Setting{{"op", "--op", "write"}, {"measure", "--measure", "latency,both"}})
	if want := "--measure: latency is listed twice (both is latency and bandwidth); list each measure once"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
