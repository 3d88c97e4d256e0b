package fleet

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const lat = "write-latency p99"

// fleetRun is a synthetic all-pairs run: healthy pairs measure about
// 10us with a few percent of spread; faults are applied per pair.
type fleetRun struct {
	hosts    int
	devices  []string // rail mode when set
	both     bool     // both directions
	dead     []int    // hosts whose serve does not answer
	slow     map[int]float64
	badLinks [][2]int // pairs that fail
	lagLinks map[[2]int]float64
}

func (f fleetRun) build(t *testing.T) ([]Host, []Outcome) {
	t.Helper()
	hosts := names(f.hosts)
	pattern := AllPairs
	if f.devices != nil {
		pattern = Rail
		for i := range hosts {
			hosts[i].Devices = f.devices
		}
	}
	pairs, err := pattern.Pairs(hosts, PatternOptions{BothDirections: f.both})
	if err != nil {
		t.Fatal(err)
	}
	var out []Outcome
	for _, p := range pairs {
		a, b := p.A.Host, p.B.Host
		o := Outcome{Pair: p, Metric: lat, OK: true, Value: 10e-6 * (1 + 0.02*float64((a+b)%5))}
		if s, ok := f.slow[a]; ok {
			o.Value *= s
		}
		if s, ok := f.slow[b]; ok {
			o.Value *= s
		}
		if k := f.lagLinks[[2]int{min(a, b), max(a, b)}]; k > 0 {
			o.Value = k
		}
		if slices.Contains(f.badLinks, [2]int{min(a, b), max(a, b)}) {
			o.OK, o.Value = false, 0
		}
		if slices.Contains(f.dead, a) || slices.Contains(f.dead, b) {
			o.OK, o.Env, o.Value = false, true, 0
		}
		out = append(out, o)
	}
	return hosts, out
}

func suspectString(s []Suspect) string {
	var parts []string
	for _, x := range s {
		parts = append(parts, fmt.Sprintf("%s %s (%g)", x.Kind, x.Name, x.Score))
	}
	return strings.Join(parts, "; ")
}

func TestSuspects(t *testing.T) {
	type tc struct {
		name string
		run  fleetRun
		want string
	}
	var cases []tc
	for n := 4; n <= 8; n++ {
		dead := n / 2
		cases = append(cases, tc{fmt.Sprintf("dead host among %d", n), fleetRun{hosts: n, dead: []int{dead}},
			fmt.Sprintf("host h%d (%d)", dead, n-1)})
	}
	cases = append(cases, []tc{
		{"all fine", fleetRun{hosts: 6}, ""},
		{"all fine, both directions", fleetRun{hosts: 5, both: true}, ""},
		{"one failing link", fleetRun{hosts: 6, badLinks: [][2]int{{1, 4}}}, "link h1 <-> h4 (1)"},
		{"one 20ms path", fleetRun{hosts: 4, lagLinks: map[[2]int]float64{{0, 3}: 20e-3}}, "link h0 <-> h3 (1)"},
		{"failing link, both directions", fleetRun{hosts: 5, both: true, badLinks: [][2]int{{2, 3}}}, "link h2 <-> h3 (2)"},
		{"slow host", fleetRun{hosts: 6, slow: map[int]float64{2: 5}}, "host h2 (5)"},
		{"slow host among 4", fleetRun{hosts: 4, slow: map[int]float64{0: 3}}, "host h0 (3)"},
		{"slow host among 3", fleetRun{hosts: 3, slow: map[int]float64{1: 3}}, "host h1 (2)"},
		{"two dead hosts among 4", fleetRun{hosts: 4, dead: []int{0, 3}}, "host h0 (3); host h3 (2)"},
		{"dead host and a bad link elsewhere", fleetRun{hosts: 6, dead: []int{5}, badLinks: [][2]int{{0, 1}}},
			"host h5 (5); link h0 <-> h1 (1)"},
		// Two bad paths from one host: most of its partners at N=4, so
		// the host; at N=6 two of five, so two links.
		{"two bad links sharing a host among 4", fleetRun{hosts: 4, badLinks: [][2]int{{0, 1}, {0, 2}}}, "host h0 (2)"},
		{"two bad links sharing a host among 6", fleetRun{hosts: 6, badLinks: [][2]int{{0, 1}, {0, 2}}},
			"link h0 <-> h1 (1); link h0 <-> h2 (1)"},
		{"two hosts, failing pair", fleetRun{hosts: 2, badLinks: [][2]int{{0, 1}}}, "link h0 <-> h1 (1)"},
		{"rail, all fine", fleetRun{hosts: 4, devices: []string{"mlx5_0", "mlx5_1"}}, ""},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hosts, outcomes := c.run.build(t)
			got, err := Suspects(hosts, outcomes, 0)
			if err != nil {
				t.Fatal(err)
			}
			if s := suspectString(got); s != c.want {
				t.Errorf("suspects\n got %s\nwant %s", s, c.want)
			}
			for _, s := range got {
				if len(s.Evidence) == 0 {
					t.Errorf("%s %s has no evidence", s.Kind, s.Name)
				}
			}
		})
	}
}

// In rail mode a NIC failing with every partner on its rail is a NIC
// suspect; a host whose NICs all fail is a host suspect.
func TestSuspectsRail(t *testing.T) {
	run := fleetRun{hosts: 4, devices: []string{"mlx5_0", "mlx5_1"}}
	hosts, outcomes := run.build(t)
	for i := range outcomes {
		p := outcomes[i].Pair
		if p.A == (NIC{2, "mlx5_1"}) || p.B == (NIC{2, "mlx5_1"}) {
			outcomes[i].OK, outcomes[i].Value = false, 0
		}
	}
	got, err := Suspects(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s, want := suspectString(got), "nic h2/mlx5_1 (3)"; s != want {
		t.Errorf("bad NIC: suspects %s, want %s", s, want)
	}

	run.dead = []int{1}
	hosts, outcomes = run.build(t)
	got, err = Suspects(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s, want := suspectString(got), "host h1 (6)"; s != want {
		t.Errorf("dead host: suspects %s, want %s", s, want)
	}
	wantEvidence := []string{
		"h1/mlx5_0 is bad with 3 of 3 partners",
		"h1/mlx5_1 is bad with 3 of 3 partners",
		"h0/mlx5_0 -> h1/mlx5_0 write-latency p99: a host did not answer",
	}
	if len(got) == 1 && (len(got[0].Evidence) != 8 || !slices.Equal(got[0].Evidence[:3], wantEvidence)) {
		t.Errorf("dead host evidence %q, want 2 summaries and 6 pairs starting %q", got[0].Evidence, wantEvidence)
	}
}

func TestSuspectEvidence(t *testing.T) {
	hosts, outcomes := fleetRun{hosts: 4, lagLinks: map[[2]int]float64{{1, 2}: 20e-3}}.build(t)
	outcomes = append(outcomes, Outcome{Pair: Pair{NIC{Host: 0}, NIC{Host: 3}}, Metric: "bw", OK: true, Value: 1e9, HigherIsBetter: true})
	got, err := Suspects(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Bests per host: h0 10.2us, h1 10.2, h2 10.0, h3 10.0; median 10.1us.
	want := []Suspect{{Kind: SuspectLink, Name: "h1 <-> h2", Score: 1, Evidence: []string{
		"h1 -> h2 write-latency p99: 20000.0 us, 1980.2x worse than the fleet median 10.1 us"}}}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Errorf("suspects\n got %s\nwant %s", a, b)
	}
}

// A failure that a confirmation run does not repeat blames no one.
func TestSuspectsConfirmation(t *testing.T) {
	hosts, outcomes := fleetRun{hosts: 4}.build(t)
	flaky := outcomes[0]
	flaky.OK, flaky.Value = false, 0
	outcomes = append(outcomes, flaky)
	got, err := Suspects(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("a flaky sample blamed %s", suspectString(got))
	}
	confirmed := flaky
	outcomes[0] = confirmed // the first run failed too
	got, err = Suspects(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "link h0 <-> h1 (1)"
	if s := suspectString(got); s != want {
		t.Errorf("confirmed failure: suspects %s, want %s", s, want)
	}
	if ev := got[0].Evidence[0]; !strings.HasSuffix(ev, "failed in all 2 runs") {
		t.Errorf("evidence %q does not count the runs", ev)
	}
}

// Bandwidth is higher-is-better: a host at a quarter of the rate lags.
func TestSuspectsBandwidth(t *testing.T) {
	hosts := names(5)
	pairs, _ := AllPairs.Pairs(hosts, PatternOptions{BothDirections: true})
	var outcomes []Outcome
	for _, p := range pairs {
		v := 12e9
		if p.A.Host == 3 || p.B.Host == 3 {
			v = 3e9
		}
		outcomes = append(outcomes, Outcome{Pair: p, Metric: "write-bw", OK: true, Value: v, HigherIsBetter: true})
	}
	got, err := Suspects(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s, want := suspectString(got), "host h3 (8)"; s != want {
		t.Errorf("suspects %s, want %s", s, want)
	}
	// 12e9 bytes/s is 96 Gb/s.
	if want := "h0 -> h3 write-bw: 24.000 Gb/s, 4.0x worse than the fleet median 96.000 Gb/s"; len(got) == 0 || !slices.Contains(got[0].Evidence, want) {
		t.Errorf("evidence %+v lacks %q", got, want)
	}
	// 3x is inside a lag factor of 5.
	got, err = Suspects(hosts, outcomes, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("lag factor 5: suspects %s, want none", suspectString(got))
	}
}

func TestSuspectsBadInput(t *testing.T) {
	hosts := names(2)
	ok := Outcome{Pair: Pair{NIC{Host: 0}, NIC{Host: 1}}, Metric: "m", OK: true, Value: 1}
	for _, tc := range []struct {
		name      string
		outcomes  []Outcome
		lagFactor float64
		want      string
	}{
		{"host out of range", []Outcome{{Pair: Pair{NIC{Host: 0}, NIC{Host: 2}}}}, 0, "outcome 1 names host 2, but there are 2 hosts"},
		{"self pair", []Outcome{ok, {Pair: Pair{NIC{Host: 1}, NIC{Host: 1}}}}, 0, "outcome 2 pairs h1 with itself"},
		{"mixed direction", []Outcome{ok, {Pair: ok.Pair, Metric: "m", HigherIsBetter: true}}, 0,
			`outcome 2: metric "m" is both higher- and lower-is-better; give the two their own names`},
		{"lag factor", []Outcome{ok}, 0.5, "lag factor 0.5 must be above 1 (0 means 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Suspects(hosts, tc.outcomes, tc.lagFactor)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Suspects error %v, want %s", err, tc.want)
			}
			_, err = Matrices(hosts, tc.outcomes, tc.lagFactor)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Matrices error %v, want %s", err, tc.want)
			}
		})
	}
}

// Two hosts alone: the failing pair is named as a link, with the caveat
// that nothing tells the hosts from the path.
func TestSuspectsTwoHostsCaveat(t *testing.T) {
	hosts, outcomes := fleetRun{hosts: 2, badLinks: [][2]int{{0, 1}}}.build(t)
	got, err := Suspects(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"h0 -> h1 write-latency p99: failed",
		"h0 was tested with no one else, so it cannot be told apart from this path",
		"h1 was tested with no one else, so it cannot be told apart from this path",
	}
	if len(got) != 1 || !slices.Equal(got[0].Evidence, want) {
		t.Errorf("suspects %+v, want one link with evidence %q", got, want)
	}
}
