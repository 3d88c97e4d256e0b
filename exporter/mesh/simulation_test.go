package mesh

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// The simulation runs the mesh of a whole fleet without RDMA: who probes
// whom, how evenly, how long until every pair has been probed, and what
// one node's Choose costs. Its table goes into docs/measurements.md (Mesh
// scale).

// ring is a whole fleet's ring of one epoch, computed once for all nodes:
// Choose on every node of a 10,000-node fleet for thousands of epochs
// would take hours, the ring takes milliseconds. TestChooseAgreesWithRing
// holds the two to the same answer.
type ring struct {
	names  []string
	hashes []uint64
	order  []int32 // node indices in ring order
}

func newRing(names []string) *ring {
	r := &ring{names: names, hashes: make([]uint64, len(names)), order: make([]int32, len(names))}
	for i := range r.order {
		r.order[i] = int32(i)
	}
	return r
}

// at orders the ring for an epoch: by hash, then name, as Choose ranks.
func (r *ring) at(epoch uint64) {
	for i, n := range r.names {
		r.hashes[i] = ringHash(n, epoch)
	}
	slices.SortFunc(r.order, func(a, b int32) int {
		if c := cmp.Compare(r.hashes[a], r.hashes[b]); c != 0 {
			return c
		}
		return strings.Compare(r.names[a], r.names[b])
	})
}

// each calls f(a, b) for every node a and each of the k nodes after it.
func (r *ring) each(k int, f func(a, b int32)) {
	n := len(r.order)
	for p, a := range r.order {
		for d := 1; d <= k && d < n; d++ {
			f(a, r.order[(p+d)%n])
		}
	}
}

func fleetNames(all []config.Target) []string {
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = t.Name
	}
	return out
}

func TestChooseAgreesWithRing(t *testing.T) {
	const n, k = 300, 16
	all := fleet(n, 0)
	r := newRing(fleetNames(all))
	for epoch := uint64(0); epoch < 3; epoch++ {
		r.at(epoch)
		want := make([][]string, n)
		r.each(k, func(a, b int32) { want[a] = append(want[a], r.names[b]) })
		for i := range all {
			slices.Sort(want[i])
			got := names(Choose(config.Mesh{MaxTargets: k}, selfOf(all, i), all, epoch).Targets)
			if !slices.Equal(got, want[i]) {
				t.Fatalf("epoch %d node %s: Choose %v, ring %v", epoch, all[i].Name, got, want[i])
			}
		}
	}
}

// pairs is a bitset of ordered pairs (a, b), a*n+b: 12.5 MB for 10,000
// nodes.
type pairs struct {
	n    int
	bits []uint64
	left int // pairs a != b not yet set
}

func newPairs(n int) *pairs {
	return &pairs{n: n, bits: make([]uint64, (n*n+63)/64), left: n * (n - 1)}
}

func (p *pairs) set(a, b int32) {
	i := int(a)*p.n + int(b)
	w, m := i/64, uint64(1)<<(i%64)
	if p.bits[w]&m == 0 {
		p.bits[w] |= m
		p.left--
	}
}

func (p *pairs) count() int {
	c := 0
	for _, w := range p.bits {
		c += bits.OnesCount64(w)
	}
	return c
}

// coverage runs the ring epoch after epoch from epoch 0 until every ordered
// pair has been probed, or limit epochs; it returns the periods taken, or
// -1 past the limit. preset marks pairs that are always probed.
func coverage(names []string, k, limit int, preset func(*pairs)) int {
	r := newRing(names)
	p := newPairs(len(names))
	if preset != nil {
		preset(p)
	}
	for e := 0; e < limit; e++ {
		r.at(uint64(e))
		r.each(k, p.set)
		if p.left == 0 {
			return e + 1
		}
	}
	return -1
}

// rendezvousInDegree is the alternative the issue measured: each node
// takes its top k of hash(self, target, epoch). Kept to show why the ring
// was chosen.
func rendezvousInDegree(names []string, k int, epoch uint64) []int {
	in := make([]int, len(names))
	type scored struct {
		h uint64
		j int
	}
	s := make([]scored, 0, len(names))
	for i, a := range names {
		s = s[:0]
		for j, b := range names {
			if j != i {
				s = append(s, scored{ringHash(a+"\x00"+b, epoch), j})
			}
		}
		slices.SortFunc(s, func(x, y scored) int { return cmp.Compare(x.h, y.h) })
		for _, x := range s[:k] {
			in[x.j]++
		}
	}
	return in
}

// chooseCost measures one node's Choose in a fleet of n.
func chooseCost(cfg config.Mesh, all []config.Target) (ns, bytes, allocs int64, held uintptr) {
	self := selfOf(all, len(all)/2)
	cfg.Labels = self.Labels
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Choose(cfg, self, all, 12345)
		}
	})
	s := Choose(cfg, self, all, 12345)
	// The Targets' strings are shared with the discovered list; what the
	// selection adds is its own header and the slice of Target values.
	held = unsafe.Sizeof(s) + uintptr(cap(s.Targets))*unsafe.Sizeof(config.Target{})
	return res.NsPerOp(), res.AllocedBytesPerOp(), res.AllocsPerOp(), held
}

// TestSimulation prints the table of docs/measurements.md's Mesh scale section and
// checks the numbers it states. MESH_SIM_FULL=1 adds the coverage of all
// ~10^8 ordered pairs of 10,000 nodes (about a minute).
func TestSimulation(t *testing.T) {
	c, err := config.Parse([]byte("modules:\n  default: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := c.Modules["default"]
	specs, interval := len(def.Tests), def.Interval
	if specs != 1 || interval != 15*time.Second {
		t.Fatalf("default module: %d specs every %v; the table assumes 1 every 15s", specs, interval)
	}
	full := os.Getenv("MESH_SIM_FULL") == "1"

	lines := []string{
		"| nodes | K | always | probes/s per node (sent + answered) | probed by min / mean / max | periods until every pair probed (99% bound) | CPU per Choose | allocated per Choose | Selection held |",
		"|---|---|---|---|---|---|---|---|---|",
	}
	for _, row := range []struct {
		n, k, racks int
		coverage    bool
	}{
		{1000, 16, 0, true},
		{1000, 32, 0, true},
		{1000, 16, 40, true},
		{10000, 32, 0, full},
	} {
		all := fleet(row.n, row.racks)
		cfg := config.Mesh{MaxTargets: row.k}
		always := "-"
		if row.racks > 0 {
			cfg.Always = sameRack
			always = fmt.Sprintf("same rack (%d racks of %d)", row.racks, row.n/row.racks)
		}

		// In-degree through Choose on every node (for 10,000 nodes the
		// ring, which is the same answer, at a hundredth of the time).
		var in []int
		if row.n <= 1000 {
			in = inDegrees(t, cfg, all, 7)
		} else {
			r := newRing(fleetNames(all))
			r.at(7)
			in = make([]int, row.n)
			r.each(row.k, func(_, b int32) { in[b]++ })
		}
		lo, mean, hi := spread(in)
		if float64(lo) < 0.5*mean || float64(hi) > 2*mean {
			t.Errorf("N=%d K=%d: probed by %d..%d, outside 0.5x..2x of the mean %.1f", row.n, row.k, lo, hi, mean)
		}
		if row.racks == 0 && (lo != row.k || hi != row.k) {
			t.Errorf("N=%d K=%d: probed by %d..%d, want exactly K", row.n, row.k, lo, hi)
		}
		// Each node sends mean probes per round (its set is as large on
		// average as its in-degree) and answers as many.
		perSecond := 2 * mean * float64(specs) / interval.Seconds()

		bound := coverageBound(row.n, row.k, 0.01)
		periods := "not run (MESH_SIM_FULL=1)"
		if row.coverage {
			start := time.Now()
			var preset func(*pairs)
			if row.racks > 0 {
				preset = func(p *pairs) {
					for a := range row.n {
						for b := a % row.racks; b < row.n; b += row.racks {
							if a != b {
								p.set(int32(a), int32(b))
							}
						}
					}
				}
			}
			got := coverage(fleetNames(all), row.k, bound, preset)
			t.Logf("N=%d K=%d: coverage computed in %v", row.n, row.k, time.Since(start).Round(time.Millisecond))
			if got < 0 {
				t.Errorf("N=%d K=%d: pairs left unprobed after the bound of %d periods", row.n, row.k, bound)
			}
			periods = fmt.Sprint(got)
		}

		ns, bytes, allocs, held := chooseCost(cfg, all)
		lines = append(lines, fmt.Sprintf("| %d | %d | %s | %.2f | %d / %.1f / %d | %s (%d) | %.1f µs | %d B in %d allocs | %d B |",
			row.n, row.k, always, perSecond, lo, mean, hi, periods, bound, float64(ns)/1e3, bytes, allocs, held))
		if ns > int64(10*time.Millisecond) {
			t.Errorf("N=%d: Choose takes %v, want well under 10ms", row.n, time.Duration(ns))
		}
	}

	// The alternative, measured so that the choice is on record.
	names := fleetNames(fleet(1000, 0))
	var lo, hi int = math.MaxInt, 0
	for e := uint64(0); e < 3; e++ {
		l, _, h := spread(rendezvousInDegree(names, 16, e))
		lo, hi = min(lo, l), max(hi, h)
	}
	lines = append(lines, "", fmt.Sprintf("Rendezvous hashing (top K of hash(self, target, epoch)), not used: 1000 nodes, K=16, probed by %d..%d over 3 epochs (%.2fx..%.2fx of K).", lo, hi, float64(lo)/16, float64(hi)/16))
	t.Log("simulation:\n" + strings.Join(lines, "\n"))
}

// TestPairsBitset: the coverage count is only as good as its bitset.
func TestPairsBitset(t *testing.T) {
	p := newPairs(70)
	p.set(0, 69)
	p.set(0, 69)
	p.set(69, 0)
	p.set(33, 34)
	if p.count() != 3 || p.left != 70*69-3 {
		t.Errorf("count %d left %d, want 3 and %d", p.count(), p.left, 70*69-3)
	}
}

func BenchmarkChoose(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, k := range []int{16, 32} {
			all := fleet(n, 40)
			for _, always := range []bool{false, true} {
				cfg := config.Mesh{MaxTargets: k}
				if always {
					cfg.Always = sameRack
				}
				self := selfOf(all, n/2)
				b.Run(fmt.Sprintf("N=%d/K=%d/always=%v", n, k, always), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						Choose(cfg, self, all, 12345)
					}
				})
			}
		}
	}
}
