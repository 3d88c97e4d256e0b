package fleet

import (
	"fmt"
	"testing"
)

func names(n int) []Host {
	hosts := make([]Host, n)
	for i := range hosts {
		hosts[i] = Host{Name: fmt.Sprintf("h%d", i)}
	}
	return hosts
}

// pairString writes pairs as "0->1 1->2", with "/dev" where a device is set.
func pairString(pairs []Pair) string {
	s := ""
	for i, p := range pairs {
		if i > 0 {
			s += " "
		}
		s += nicString(p.A) + "->" + nicString(p.B)
	}
	return s
}

func nicString(n NIC) string {
	if n.Device == "" {
		return fmt.Sprint(n.Host)
	}
	return fmt.Sprintf("%d/%s", n.Host, n.Device)
}

func TestPatternPairs(t *testing.T) {
	railHosts := []Host{{Name: "a", Devices: []string{"x", "y"}}, {Name: "b", Devices: []string{"x", "y"}}, {Name: "c", Devices: []string{"p", "q"}}}
	for _, tc := range []struct {
		name    string
		pattern Pattern
		hosts   []Host
		opt     PatternOptions
		want    string
	}{
		{"all-pairs 4", AllPairs, names(4), PatternOptions{}, "0->1 0->2 0->3 1->2 1->3 2->3"},
		{"all-pairs 2 both", AllPairs, names(2), PatternOptions{BothDirections: true}, "0->1 1->0"},
		{"all-pairs first device", AllPairs, []Host{{Name: "a", Devices: []string{"m1", "m2"}}, {Name: "b"}}, PatternOptions{}, "0/m1->1"},
		{"ring 2 is one pair", Ring, names(2), PatternOptions{}, "0->1"},
		{"ring 4", Ring, names(4), PatternOptions{}, "0->1 1->2 2->3 3->0"},
		{"pairs", ExplicitPairs, names(3), PatternOptions{Pairs: [][2]string{{"h2", "h0"}, {"h0", "h2"}}}, "2->0 0->2"},
		{"rail", Rail, railHosts, PatternOptions{}, "0/x->1/x 0/x->2/p 1/x->2/p 0/y->1/y 0/y->2/q 1/y->2/q"},
		{"rail both", Rail, railHosts[:2], PatternOptions{BothDirections: true}, "0/x->1/x 1/x->0/x 0/y->1/y 1/y->0/y"},
		{"incast 3", Incast, names(3), PatternOptions{}, "1->0 2->0 0->1 2->1 0->2 1->2"},
		{"incast 2", Incast, names(2), PatternOptions{}, "1->0 0->1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pairs, err := tc.pattern.Pairs(tc.hosts, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := pairString(pairs); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestPatternPairsErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pattern Pattern
		hosts   []Host
		opt     PatternOptions
		want    string
	}{
		{"unknown", "mesh", names(3), PatternOptions{}, `unknown pattern "mesh"; one of all-pairs, ring, pairs, rail, incast`},
		{"incast one host", Incast, names(1), PatternOptions{},
			"pattern incast needs at least 2 hosts, got 1; add hosts or test one host's devices with a single-pair scenario"},
		{"all-pairs one host", AllPairs, names(1), PatternOptions{},
			"pattern all-pairs needs at least 2 hosts, got 1; add hosts or test one host's devices with a single-pair scenario"},
		{"pairs none", ExplicitPairs, names(3), PatternOptions{}, "pattern pairs has no pairs; list them as [initiator, responder] host names"},
		{"pairs unknown host", ExplicitPairs, names(3), PatternOptions{Pairs: [][2]string{{"h0", "h9"}}},
			`pair 1: host "h9" is not in the host list; use one of its names`},
		{"pairs self", ExplicitPairs, names(3), PatternOptions{Pairs: [][2]string{{"h0", "h1"}, {"h1", "h1"}}},
			"pair 2: h1 with itself; a pair needs two hosts"},
		{"pairs twice", ExplicitPairs, names(3), PatternOptions{Pairs: [][2]string{{"h0", "h1"}, {"h1", "h0"}, {"h0", "h1"}}},
			"pairs 1 and 3 are both h0 -> h1; list each pair once"},
		{"rail unequal", Rail, []Host{{Name: "a", Devices: []string{"x", "y"}}, {Name: "b", Devices: []string{"x"}}, {Name: "c", Devices: []string{"x", "y"}}, {Name: "d"}}, PatternOptions{},
			"pattern rail needs the same number of devices on every host: a has 2, b has 1, d has 0; list the same count on each"},
		{"rail without devices", Rail, names(3), PatternOptions{},
			"pattern rail needs devices on every host; list them, e.g. devices=mlx5_0,mlx5_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pairs, err := tc.pattern.Pairs(tc.hosts, tc.opt)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Pairs = %s, error %v\nwant error %s", pairString(pairs), err, tc.want)
			}
		})
	}
}

func TestPatternPairCounts(t *testing.T) {
	for n := 2; n <= 12; n++ {
		hosts := names(n)
		for _, tc := range []struct {
			pattern Pattern
			opt     PatternOptions
			want    int
		}{
			{AllPairs, PatternOptions{}, n * (n - 1) / 2},
			{AllPairs, PatternOptions{BothDirections: true}, n * (n - 1)},
			{Ring, PatternOptions{}, map[bool]int{true: 1, false: n}[n == 2]},
			{Incast, PatternOptions{}, n * (n - 1)},
		} {
			pairs, err := tc.pattern.Pairs(hosts, tc.opt)
			if err != nil {
				t.Fatalf("%s over %d: %v", tc.pattern, n, err)
			}
			if len(pairs) != tc.want {
				t.Errorf("%s over %d hosts (%+v): %d pairs, want %d", tc.pattern, n, tc.opt, len(pairs), tc.want)
			}
			seen := map[Pair]bool{}
			for _, p := range pairs {
				if seen[p] || p.A == p.B {
					t.Errorf("%s over %d: pair %s repeated or with itself", tc.pattern, n, pairString([]Pair{p}))
				}
				seen[p] = true
			}
		}
	}
}
