package mesh

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// fleet is n targets node-00000... with distinct addresses; with racks > 0
// node i carries rack r(i mod racks), so racks are equal in size.
func fleet(n, racks int) []config.Target {
	ts := make([]config.Target, n)
	for i := range ts {
		ts[i] = config.Target{
			Name:       fmt.Sprintf("node-%05d", i),
			Address:    fmt.Sprintf("10.%d.%d.%d:18520", i>>16, i>>8&0xff, i&0xff),
			Module:     "default",
			DevicePort: 1,
		}
		if racks > 0 {
			ts[i].Labels = mustLabels(map[string]string{"rack": rackOf(i, racks)})
		}
	}
	return ts
}

func rackOf(i, racks int) string { return fmt.Sprintf("r%d", i%racks) }

func mustLabels(m map[string]string) config.Labels {
	l, err := config.NewLabels(m)
	if err != nil {
		panic(err)
	}
	return l
}

// selfOf is node i of a fleet as it knows itself: by name, with its labels.
func selfOf(all []config.Target, i int) Self {
	return Self{Name: all[i].Name, Labels: all[i].Labels.Map()}
}

func names(ts []config.Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

var sameRack = []config.MeshSelector{{Same: []string{"rack"}}}

func TestEpochNext(t *testing.T) {
	for _, tc := range []struct {
		t      time.Time
		rotate time.Duration
		want   uint64
	}{
		{time.Unix(7199, 999999999), time.Hour, 1},
		{time.Unix(7200, 0), time.Hour, 2},
		{time.Unix(1_800_000_000, 0), time.Hour, 500_000},
		{time.Unix(1_800_000_059, 0), time.Minute, 30_000_000},
		{time.Unix(-5, 0), time.Hour, 0},
		{time.Unix(7200, 0), 0, 0},
	} {
		if got := Epoch(tc.t, tc.rotate); got != tc.want {
			t.Errorf("Epoch(%v, %v) = %d, want %d", tc.t.Unix(), tc.rotate, got, tc.want)
		}
	}
	if got, want := Next(2, time.Hour), time.Unix(10800, 0); !got.Equal(want) {
		t.Errorf("Next(2, 1h) = %v, want %v", got, want)
	}
	// Next is where Epoch steps: one nanosecond before it is still the
	// epoch, at it the next one.
	for _, rotate := range []time.Duration{time.Minute, time.Hour, 90 * time.Minute} {
		e := Epoch(time.Unix(1_800_000_000, 0), rotate)
		n := Next(e, rotate)
		if Epoch(n.Add(-time.Nanosecond), rotate) != e || Epoch(n, rotate) != e+1 {
			t.Errorf("rotate %v: Next(%d) = %v is not where Epoch steps", rotate, e, n)
		}
	}
}

// TestRingHashStable: every node of a fleet must place names alike, also
// nodes running different releases, so the hash may never change.
func TestRingHashStable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		epoch uint64
		want  uint64
	}{
		{"node-a", 0, 0x33e52b580d078a13},
		{"node-a", 1, 0x002f8adc03a2a33e},
	} {
		if got := ringHash(tc.name, tc.epoch); got != tc.want {
			t.Errorf("ringHash(%q, %d) = %#x, want %#x", tc.name, tc.epoch, got, tc.want)
		}
	}
}

func TestChoose(t *testing.T) {
	var eight []config.Target
	for i, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		rack := "r1"
		if i >= 4 {
			rack = "r2"
		}
		eight = append(eight, config.Target{
			Name: "node-" + n, Address: fmt.Sprintf("10.0.0.%d:18520", i+1), Module: "default",
			Labels: mustLabels(map[string]string{"rack": rack, "rail": fmt.Sprint(i % 2)}),
		})
	}
	r1 := map[string]string{"rack": "r1"}
	for _, tc := range []struct {
		name     string
		cfg      config.Mesh
		self     Self
		epoch    uint64
		selfName string
		want     []string
	}{
		{"off, self by name", config.Mesh{}, Self{Name: "node-c"}, 0, "node-c",
			[]string{"node-a", "node-b", "node-d", "node-e", "node-f", "node-g", "node-h"}},
		{"off, self by address", config.Mesh{}, Self{Name: "host-3", Address: "10.0.0.3:18520"}, 0, "node-c",
			[]string{"node-a", "node-b", "node-d", "node-e", "node-f", "node-g", "node-h"}},
		{"off, self by Local", config.Mesh{}, Self{Name: "host-8", Local: func(hp string) bool { return hp == "10.0.0.8:18520" }}, 0, "node-h",
			[]string{"node-a", "node-b", "node-c", "node-d", "node-e", "node-f", "node-g"}},
		// These three pin the ring itself: a change would split a fleet
		// of mixed releases into disagreeing meshes.
		{"K=3 epoch 0", config.Mesh{MaxTargets: 3}, Self{Name: "node-a"}, 0, "node-a",
			[]string{"node-c", "node-d", "node-g"}},
		{"K=3 epoch 1 rotates", config.Mesh{MaxTargets: 3}, Self{Name: "node-a"}, 1, "node-a",
			[]string{"node-f", "node-g", "node-h"}},
		{"K=3 self by address takes the target's place", config.Mesh{MaxTargets: 3}, Self{Name: "host-1", Address: "10.0.0.1:18520"}, 1, "node-a",
			[]string{"node-f", "node-g", "node-h"}},
		{"K=3 self not listed", config.Mesh{MaxTargets: 3}, Self{Name: "node-x"}, 0, "node-x",
			[]string{"node-c", "node-d", "node-g"}},
		{"K above N-1 is everyone else", config.Mesh{MaxTargets: 50}, Self{Name: "node-b"}, 0, "node-b",
			[]string{"node-a", "node-c", "node-d", "node-e", "node-f", "node-g", "node-h"}},
		{"always same rack on top of K=1", config.Mesh{MaxTargets: 1, Labels: r1, Always: sameRack}, Self{Name: "node-a", Labels: r1}, 1, "node-a",
			[]string{"node-b", "node-c", "node-d", "node-f"}},
		{"always match rail 1", config.Mesh{MaxTargets: 1, Always: []config.MeshSelector{{Match: map[string]string{"rail": "1"}}}}, Self{Name: "node-a"}, 1, "node-a",
			[]string{"node-b", "node-d", "node-f", "node-h"}},
		{"always same and match together", config.Mesh{MaxTargets: 1, Labels: r1, Always: []config.MeshSelector{{Same: []string{"rack"}, Match: map[string]string{"rail": "1"}}}}, Self{Name: "node-a", Labels: r1}, 1, "node-a",
			[]string{"node-b", "node-d", "node-f"}},
		{"an empty selector keeps none", config.Mesh{MaxTargets: 1, Always: []config.MeshSelector{{}}}, Self{Name: "node-a"}, 1, "node-a",
			[]string{"node-f"}},
		{"same on a label self lacks keeps none", config.Mesh{MaxTargets: 1, Always: sameRack}, Self{Name: "node-a"}, 1, "node-a",
			[]string{"node-f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Choose(tc.cfg, tc.self, eight, tc.epoch)
			if got := names(s.Targets); !slices.Equal(got, tc.want) {
				t.Errorf("targets %v, want %v", got, tc.want)
			}
			if s.SelfName != tc.selfName || s.Known != len(eight) || s.Epoch != tc.epoch {
				t.Errorf("self %q known %d epoch %d, want %q, %d, %d", s.SelfName, s.Known, s.Epoch, tc.selfName, len(eight), tc.epoch)
			}
		})
	}
}

func TestChooseEmpty(t *testing.T) {
	s := Choose(config.Mesh{MaxTargets: 4}, Self{Name: "a"}, nil, 3)
	if len(s.Targets) != 0 || s.Known != 0 || s.SelfName != "a" {
		t.Errorf("no targets: %+v", s)
	}
	s = Choose(config.Mesh{MaxTargets: 4}, Self{Name: "a"}, []config.Target{{Name: "a", Address: "h:1"}}, 3)
	if len(s.Targets) != 0 || s.Known != 1 {
		t.Errorf("only self: %+v", s)
	}
}

// TestDeterministic: the order targets are discovered in, which differs
// between nodes and between discoveries, does not change the selection.
func TestDeterministic(t *testing.T) {
	all := fleet(300, 12)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []config.Mesh{
		{},
		{MaxTargets: 16},
		{MaxTargets: 16, Labels: map[string]string{"rack": "r3"}, Always: sameRack},
	} {
		self := selfOf(all, 3)
		want := Choose(cfg, self, all, 42)
		if cfg.Enabled() && len(want.Targets) < cfg.MaxTargets {
			t.Fatalf("%+v: %d targets, want at least %d", cfg, len(want.Targets), cfg.MaxTargets)
		}
		for range 10 {
			shuffled := slices.Clone(all)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := Choose(cfg, self, shuffled, 42); !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v: shuffled input gives %v, want %v", cfg, names(got.Targets), names(want.Targets))
			}
		}
	}
}

// TestNeverSelf: self is never a target, however it is recognised, with
// the mesh on or off, and with K as large as the fleet.
func TestNeverSelf(t *testing.T) {
	all := fleet(60, 3)
	for _, cfg := range []config.Mesh{{}, {MaxTargets: 8}, {MaxTargets: 60}, {MaxTargets: 8, Labels: map[string]string{"rack": "r0"}, Always: sameRack}} {
		for i, me := range all {
			labels := me.Labels.Map()
			for how, self := range map[string]Self{
				"name":    {Name: me.Name, Labels: labels},
				"address": {Name: "someone", Address: me.Address, Labels: labels},
				"local":   {Name: "someone", Local: func(hp string) bool { return hp == me.Address }, Labels: labels},
			} {
				s := Choose(cfg, self, all, uint64(i))
				for _, tg := range s.Targets {
					if tg.Name == me.Name {
						t.Fatalf("%+v, self by %s: node %s chose itself", cfg, how, me.Name)
					}
				}
				want := min(len(all)-1, cfg.MaxTargets)
				if !cfg.Enabled() {
					want = len(all) - 1
				}
				if len(s.Targets) < want {
					t.Errorf("%+v, self by %s: %d targets, want at least %d", cfg, how, len(s.Targets), want)
				}
				if s.SelfName != me.Name {
					t.Errorf("self by %s: SelfName %q, want %q", how, s.SelfName, me.Name)
				}
			}
		}
	}
}

// inDegrees counts, for every node of the fleet, how many nodes chose it.
func inDegrees(t *testing.T, cfg config.Mesh, all []config.Target, epoch uint64) []int {
	t.Helper()
	index := make(map[string]int, len(all))
	for i, tg := range all {
		index[tg.Name] = i
	}
	in := make([]int, len(all))
	for i := range all {
		c := cfg
		c.Labels = all[i].Labels.Map()
		for _, tg := range Choose(c, selfOf(all, i), all, epoch).Targets {
			in[index[tg.Name]]++
		}
	}
	return in
}

// spread returns min, mean and max.
func spread(xs []int) (lo int, mean float64, hi int) {
	lo, hi = xs[0], xs[0]
	sum := 0
	for _, x := range xs {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	return lo, float64(sum) / float64(len(xs)), hi
}

// TestBalanced: in a 1,000-node fleet every node is probed by exactly K
// nodes, epoch after epoch, and with same-rack peers on top (40 racks of
// 25) by between 0.5x and 2x the mean.
func TestBalanced(t *testing.T) {
	const n, k = 1000, 16
	for _, tc := range []struct {
		name  string
		racks int
		cfg   config.Mesh
		exact bool
	}{
		{"ring", 0, config.Mesh{MaxTargets: k}, true},
		{"ring and same rack", 40, config.Mesh{MaxTargets: k, Always: sameRack}, false},
	} {
		all := fleet(n, tc.racks)
		for epoch := uint64(100); epoch < 104; epoch++ {
			lo, mean, hi := spread(inDegrees(t, tc.cfg, all, epoch))
			t.Logf("%s, epoch %d: in-degree min %d mean %.2f max %d", tc.name, epoch, lo, mean, hi)
			if float64(lo) < 0.5*mean || float64(hi) > 2*mean {
				t.Errorf("%s, epoch %d: in-degree %d..%d outside 0.5x..2x of the mean %.2f", tc.name, epoch, lo, hi, mean)
			}
			if tc.exact && (lo != k || hi != k) {
				t.Errorf("%s, epoch %d: in-degree %d..%d, want exactly %d", tc.name, epoch, lo, hi, k)
			}
			if !tc.exact && lo < k {
				t.Errorf("%s, epoch %d: a node has %d probers, fewer than the ring's %d", tc.name, epoch, lo, k)
			}
		}
	}
}

// coverageBound is the package doc's B: the periods after which every
// ordered pair has been probed with probability at least 1-miss.
func coverageBound(n, k int, miss float64) int {
	p := float64(k) / float64(n-1)
	return int(math.Ceil(math.Log(float64(n)*float64(n-1)/miss) / -math.Log1p(-p)))
}

// TestCoverage: with N = 200 and K = 16, every ordered pair is probed
// within the bound, through Choose as each node runs it.
func TestCoverage(t *testing.T) {
	const n, k = 200, 16
	bound := coverageBound(n, k, 0.01)
	if bound != 182 {
		t.Fatalf("bound for N=%d K=%d = %d, want the 182 of the package doc", n, k, bound)
	}
	all := fleet(n, 0)
	index := make(map[string]int, n)
	for i, tg := range all {
		index[tg.Name] = i
	}
	seen := make([]bool, n*n)
	left := n * (n - 1)
	periods := 0
	for e := uint64(0); left > 0 && periods < bound; e++ {
		periods++
		for i := range all {
			for _, tg := range Choose(config.Mesh{MaxTargets: k}, selfOf(all, i), all, e).Targets {
				if j := index[tg.Name]; !seen[i*n+j] {
					seen[i*n+j] = true
					left--
				}
			}
		}
	}
	t.Logf("N=%d K=%d: every ordered pair probed after %d periods; bound %d", n, k, periods, bound)
	if left > 0 {
		t.Errorf("after the bound of %d periods %d of %d pairs were never probed", bound, left, n*(n-1))
	}
}

// sets is every node's chosen target names.
func sets(all []config.Target, k int, epoch uint64) map[string][]string {
	out := make(map[string][]string, len(all))
	for i := range all {
		out[all[i].Name] = names(Choose(config.Mesh{MaxTargets: k}, selfOf(all, i), all, epoch).Targets)
	}
	return out
}

// diff returns what after has that before has not, and the reverse.
func diff(before, after []string) (added, removed []string) {
	for _, x := range after {
		if !slices.Contains(before, x) {
			added = append(added, x)
		}
	}
	for _, x := range before {
		if !slices.Contains(after, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}

// TestChurn: a node joining changes only the sets of the K nodes before
// it, each gaining it and losing one target, plus its own; a node leaving
// likewise in reverse.
func TestChurn(t *testing.T) {
	const n, k = 200, 16
	all := fleet(n, 0)
	for epoch := uint64(5); epoch < 8; epoch++ {
		before := sets(all, k, epoch)

		joined := append(slices.Clone(all), config.Target{Name: fmt.Sprintf("joiner-%d", epoch), Address: "10.9.9.9:18520", Module: "default"})
		newcomer := joined[n].Name
		after := sets(joined, k, epoch)
		if got := len(after[newcomer]); got != k {
			t.Errorf("epoch %d: the new node has %d targets, want %d", epoch, got, k)
		}
		changed := 1 // the newcomer's own set is new
		for node, was := range before {
			added, removed := diff(was, after[node])
			if added == nil && removed == nil {
				continue
			}
			changed++
			if !slices.Equal(added, []string{newcomer}) || len(removed) != 1 {
				t.Errorf("epoch %d, %s joins: %s gained %v and lost %v, want %s for one target", epoch, newcomer, node, added, removed, newcomer)
			}
		}
		if changed != k+1 {
			t.Errorf("epoch %d: a join changed %d sets, want the K=%d before it and its own", epoch, changed, k)
		}

		gone := all[int(epoch)*7%n].Name
		left := slices.DeleteFunc(slices.Clone(all), func(tg config.Target) bool { return tg.Name == gone })
		after = sets(left, k, epoch)
		changed = 1 // the leaver's set is gone
		for node, was := range before {
			if node == gone {
				continue
			}
			added, removed := diff(was, after[node])
			if added == nil && removed == nil {
				continue
			}
			changed++
			if !slices.Equal(removed, []string{gone}) || len(added) != 1 {
				t.Errorf("epoch %d, %s leaves: %s gained %v and lost %v, want one target for %s", epoch, gone, node, added, removed, gone)
			}
		}
		if changed != k+1 {
			t.Errorf("epoch %d: a leave changed %d sets, want its K probers' and its own", epoch, changed)
		}
	}
}

// TestAlways: every same-rack peer is in every node's set, self never.
func TestAlways(t *testing.T) {
	const n, racks = 240, 8
	all := fleet(n, racks)
	for epoch := uint64(0); epoch < 3; epoch++ {
		for i := range all {
			self := selfOf(all, i)
			cfg := config.Mesh{MaxTargets: 4, Labels: self.Labels, Always: sameRack}
			got := names(Choose(cfg, self, all, epoch).Targets)
			if slices.Contains(got, all[i].Name) {
				t.Fatalf("node %s chose itself", all[i].Name)
			}
			peers := 0
			for j := i % racks; j < n; j += racks {
				if j == i {
					continue
				}
				peers++
				if !slices.Contains(got, all[j].Name) {
					t.Fatalf("epoch %d: node %s lacks its rack peer %s", epoch, all[i].Name, all[j].Name)
				}
			}
			// The sample adds at most K beyond the rack.
			if len(got) < peers || len(got) > peers+4 {
				t.Errorf("node %s: %d targets, want %d rack peers plus up to 4", all[i].Name, len(got), peers)
			}
		}
	}
}
