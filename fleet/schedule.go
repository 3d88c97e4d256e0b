package fleet

import "fmt"

// RoundKind says which rule a round's pairs obey.
type RoundKind string

const (
	// Disjoint rounds book every NIC at most once: two tests sharing a
	// NIC would split its bandwidth and queue each other's messages, and
	// the numbers would describe the schedule, not the fabric.
	Disjoint RoundKind = "disjoint"
	// IncastRound holds every sender of one receiver at once. The
	// receiver's NIC is in every pair by design: many-to-one congestion
	// at that NIC is what incast measures. The senders are still
	// distinct, and this is the only kind that relaxes the rule.
	IncastRound RoundKind = "incast"
)

// Round is a set of pairs run at the same time.
type Round struct {
	Kind  RoundKind `json:"kind"`
	Pairs []Pair    `json:"pairs"`
}

// Rounds schedules the pattern's pairs: incast gets one IncastRound per
// receiver, every other pattern Schedule's disjoint rounds. parallel > 0
// caps the pairs of a round; an incast round cannot be split, so a cap
// below its senders is an error.
func (p Pattern) Rounds(pairs []Pair, parallel int) ([]Round, error) {
	if p == Incast {
		return incastRounds(pairs, parallel)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return Schedule(pairs, parallel), nil
}

// Schedule splits pairs into Disjoint rounds, every pair in exactly one.
// Pairs whose NICs connect (share NICs, directly or through other pairs)
// form a group; a group holding each unordered NIC pair exactly once, or
// exactly once in each direction, is a complete graph and is scheduled
// by the circle method: N-1 rounds of N/2 pairs for even N, N rounds for
// odd N (one NIC idle each round), twice that with both directions, the
// fewest possible. Other groups are coloured greedily, first fit in the
// given order, which needs at most 2*degree-1 rounds. Round r of every
// group runs together (the groups share no NIC), so rail's rails share
// rounds. parallel > 0 then splits each round into the fewest rounds of
// at most parallel pairs, of even sizes.
//
// Memory: all-pairs over 1000 hosts is 499,500 pairs, and the scheduler
// used to key maps by NIC (a string each) per pair and per link. It now
// numbers the NICs once (nicIDs) and works on int32 indices: a link table
// of C(N,2) int32, a bitset per greedy round, the rounds cut from one
// backing array, and a single group not copied. The plan is the same,
// pair for pair (TestPlanUnchanged pins it). BenchmarkPlanAllPairs
// (Pairs then Rounds) and `rdmarun validate` peak RSS, before -> after:
//
//	hosts  pairs      rounds  plan time        allocated          validate RSS
//	64     2,016      63      2.7 ms -> 0.25 ms  1.9 MB -> 0.25 MB  20 MB -> 19 MB
//	256    32,640     255     61 ms -> 6 ms      36 MB -> 3.8 MB    37 MB -> 23 MB
//	1000   499,500    999     1.1 s -> 0.19 s    582 MB -> 56 MB    269 MB -> 76 MB
//	1400   979,300    1399    -                  -                  551 MB -> 129 MB
//	2000   1,999,000  1999    6.2 s -> 0.48 s    2.27 GB -> 225 MB  (over maxFleetPairs)
//
// What is left is mostly the pairs and the rounds themselves, 48 bytes a
// pair each, as Pair keeps its device name for the report.
func Schedule(pairs []Pair, parallel int) []Round {
	ends, count := nicIDs(pairs)
	var all [][]Pair
	for _, g := range nicGroups(pairs, ends, count) {
		rounds := circleRounds(g.pairs, g.ends, count)
		if rounds == nil {
			rounds = greedyRounds(g.pairs, g.ends, count)
		}
		for r, round := range rounds {
			if r == len(all) {
				// Each round's capacity ends at its length, so a later
				// group's append copies rather than overwriting.
				all = append(all, round[:len(round):len(round)])
				continue
			}
			all[r] = append(all[r], round...)
		}
	}
	var out []Round
	for _, round := range all {
		chunks := 1
		if parallel > 0 {
			chunks = (len(round) + parallel - 1) / parallel
		}
		for c := range chunks {
			lo, hi := len(round)*c/chunks, len(round)*(c+1)/chunks
			out = append(out, Round{Kind: Disjoint, Pairs: round[lo:hi:hi]})
		}
	}
	return out
}

// nicIDs numbers the NICs in order of first appearance (A before B) and
// returns each pair's two numbers and how many NICs there are.
func nicIDs(pairs []Pair) ([][2]int32, int) {
	id := map[NIC]int32{}
	number := func(n NIC) int32 {
		i, ok := id[n]
		if !ok {
			i = int32(len(id))
			id[n] = i
		}
		return i
	}
	ends := make([][2]int32, len(pairs))
	for k, p := range pairs {
		// Generated patterns repeat A over runs of pairs: skip its lookup.
		if k > 0 && p.A == pairs[k-1].A {
			ends[k][0] = ends[k-1][0]
		} else {
			ends[k][0] = number(p.A)
		}
		ends[k][1] = number(p.B)
	}
	return ends, len(id)
}

type link struct{ lo, hi NIC } // unordered: lo is the one seen first

type group struct {
	pairs []Pair
	ends  [][2]int32
}

// nicGroups splits pairs into connected groups, in order of each group's
// first pair, each keeping the given order.
func nicGroups(pairs []Pair, ends [][2]int32, count int) []group {
	parent := make([]int32, count)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(n int32) int32 {
		root := n
		for parent[root] != root {
			root = parent[root]
		}
		for parent[n] != root {
			parent[n], n = root, parent[n]
		}
		return root
	}
	for _, e := range ends {
		parent[find(e[0])] = find(e[1])
	}
	index := make([]int32, count)  // root -> group + 1
	of := make([]int32, len(ends)) // pair -> group
	var sizes []int
	for k, e := range ends {
		root := find(e[0])
		if index[root] == 0 {
			sizes = append(sizes, 0)
			index[root] = int32(len(sizes))
		}
		of[k] = index[root] - 1
		sizes[of[k]]++
	}
	if len(sizes) == 1 {
		return []group{{pairs, ends}} // the same pairs: no need for the copy
	}
	groups := make([]group, len(sizes))
	for g, n := range sizes {
		groups[g] = group{make([]Pair, 0, n), make([][2]int32, 0, n)}
	}
	for k, g := range of {
		groups[g].pairs = append(groups[g].pairs, pairs[k])
		groups[g].ends = append(groups[g].ends, ends[k])
	}
	return groups
}

// circleRounds schedules a group that is a complete graph (see Schedule)
// and returns nil for any other group. count is how many NICs ends
// numbers.
func circleRounds(group []Pair, ends [][2]int32, count int) [][]Pair {
	// The group's NICs in order of first appearance within it: the global
	// numbers keep that order, since a NIC first appears in its own group.
	pos := make([]int32, count)
	for i := range pos {
		pos[i] = -1
	}
	var nics []int32
	for _, e := range ends {
		for _, n := range e {
			if pos[n] < 0 {
				pos[n] = int32(len(nics))
				nics = append(nics, n)
			}
		}
	}
	m := len(nics)
	links := m * (m - 1) / 2
	if len(group) != links && len(group) != 2*links {
		return nil // a complete graph has each link once or twice
	}
	// table holds, per unordered link (lower position first), 0 when
	// unseen, k+1 for its first pair k as given, -(k+1) once the reverse
	// was seen too.
	table := make([]int32, links)
	slot := func(a, b int32) int {
		lo, hi := int(pos[a]), int(pos[b])
		if lo > hi {
			lo, hi = hi, lo
		}
		return hi*(hi-1)/2 + lo
	}
	backward := 0
	for k, e := range ends {
		if e[0] == e[1] {
			return nil
		}
		s := slot(e[0], e[1])
		switch v := table[s]; {
		case v == 0:
			table[s] = int32(k + 1)
		case v > 0 && ends[v-1][0] == e[1]:
			table[s] = -v
			backward++
		default:
			return nil // the same direction twice
		}
	}
	if len(group) != links+backward || (backward != 0 && backward != links) {
		return nil
	}
	first := func(a, b int32) Pair {
		v := table[slot(a, b)]
		if v < 0 {
			v = -v
		}
		return group[v-1]
	}
	// The circle method: seat the NICs around a table, one fixed; each
	// round pairs seat i with seat M-1-i, then everyone but the fixed
	// seat moves one place. With odd N an empty seat idles one NIC.
	seats := make([]int, m, m+1)
	for i := range seats {
		seats[i] = i
	}
	if m%2 == 1 {
		seats = append(seats, -1)
	}
	M := len(seats)
	rounds := make([][]Pair, 0, 2*(M-1))
	backing := make([]Pair, 0, len(group)) // every round is cut from it
	for range M - 1 {
		start := len(backing)
		for i := range M / 2 {
			a, b := seats[i], seats[M-1-i]
			if a >= 0 && b >= 0 {
				backing = append(backing, first(nics[a], nics[b]))
			}
		}
		rounds = append(rounds, backing[start:len(backing):len(backing)])
		last := seats[M-1]
		copy(seats[2:], seats[1:M-1])
		seats[1] = last
	}
	if backward > 0 {
		for _, round := range rounds[:M-1] {
			start := len(backing)
			for _, p := range round {
				backing = append(backing, Pair{A: p.B, B: p.A})
			}
			rounds = append(rounds, backing[start:len(backing):len(backing)])
		}
	}
	return rounds
}

// greedyRounds puts each pair into the first round where neither NIC is
// booked.
func greedyRounds(group []Pair, ends [][2]int32, count int) [][]Pair {
	var rounds [][]Pair
	var booked [][]uint64 // a bit per NIC number, per round
	words := (count + 63) / 64
	isBooked := func(r int, n int32) bool { return booked[r][n/64]&(1<<(n%64)) != 0 }
	for k, p := range group {
		a, b := ends[k][0], ends[k][1]
		r := 0
		for r < len(rounds) && (isBooked(r, a) || isBooked(r, b)) {
			r++
		}
		if r == len(rounds) {
			rounds = append(rounds, nil)
			booked = append(booked, make([]uint64, words))
		}
		rounds[r] = append(rounds[r], p)
		booked[r][a/64] |= 1 << (a % 64)
		booked[r][b/64] |= 1 << (b % 64)
	}
	return rounds
}

// incastRounds makes one round per receiver (B), in order of first
// appearance, holding all of its senders.
func incastRounds(pairs []Pair, parallel int) ([]Round, error) {
	index := map[NIC]int{}
	var rounds []Round
	for _, p := range pairs {
		if p.A == p.B {
			return nil, fmt.Errorf("incast pair host %d -> itself; a sender must differ from its receiver", p.A.Host)
		}
		r, ok := index[p.B]
		if !ok {
			r = len(rounds)
			index[p.B] = r
			rounds = append(rounds, Round{Kind: IncastRound})
		}
		for _, q := range rounds[r].Pairs {
			if q.A == p.A {
				return nil, fmt.Errorf("incast sender host %d appears twice for receiver host %d; list each sender once", p.A.Host, p.B.Host)
			}
		}
		rounds[r].Pairs = append(rounds[r].Pairs, p)
	}
	for _, r := range rounds {
		if parallel > 0 && len(r.Pairs) > parallel {
			return nil, fmt.Errorf("parallel: %d is below the %d senders of an incast round, which must run together; raise parallel to %d or remove it", parallel, len(r.Pairs), len(r.Pairs))
		}
	}
	return rounds, nil
}
