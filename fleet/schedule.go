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
func Schedule(pairs []Pair, parallel int) []Round {
	var all [][]Pair
	for _, group := range nicGroups(pairs) {
		rounds := circleRounds(group)
		if rounds == nil {
			rounds = greedyRounds(group)
		}
		for r, round := range rounds {
			if r == len(all) {
				all = append(all, nil)
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

// nicGroups splits pairs into connected groups, in order of each group's
// first pair, each keeping the given order.
func nicGroups(pairs []Pair) [][]Pair {
	parent := map[NIC]NIC{}
	var find func(NIC) NIC
	find = func(n NIC) NIC {
		p, ok := parent[n]
		if !ok || p == n {
			parent[n] = n
			return n
		}
		root := find(p)
		parent[n] = root
		return root
	}
	for _, p := range pairs {
		parent[find(p.A)] = find(p.B)
	}
	index := map[NIC]int{}
	var groups [][]Pair
	for _, p := range pairs {
		root := find(p.A)
		g, ok := index[root]
		if !ok {
			g = len(groups)
			index[root] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], p)
	}
	return groups
}

type link struct{ lo, hi NIC } // unordered: lo is the one seen first

// circleRounds schedules a group that is a complete graph (see Schedule)
// and returns nil for any other group.
func circleRounds(group []Pair) [][]Pair {
	var nics []NIC
	seen := map[NIC]bool{}
	for _, p := range group {
		for _, n := range []NIC{p.A, p.B} {
			if !seen[n] {
				seen[n] = true
				nics = append(nics, n)
			}
		}
	}
	pos := map[NIC]int{}
	for i, n := range nics {
		pos[n] = i
	}
	key := func(a, b NIC) link {
		if pos[a] > pos[b] {
			a, b = b, a
		}
		return link{a, b}
	}
	forward := map[link]Pair{} // each link's first pair as given
	backward := map[link]bool{}
	for _, p := range group {
		if p.A == p.B {
			return nil
		}
		k := key(p.A, p.B)
		first, ok := forward[k]
		switch {
		case !ok:
			forward[k] = p
		case first.A == p.B && !backward[k]:
			backward[k] = true
		default:
			return nil // the same direction twice
		}
	}
	m := len(nics)
	if len(forward) != m*(m-1)/2 {
		return nil
	}
	directions := 1
	if len(backward) > 0 {
		if len(backward) != len(forward) {
			return nil
		}
		directions = 2
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
	var rounds [][]Pair
	for range M - 1 {
		var round []Pair
		for i := range M / 2 {
			a, b := seats[i], seats[M-1-i]
			if a >= 0 && b >= 0 {
				round = append(round, forward[key(nics[a], nics[b])])
			}
		}
		rounds = append(rounds, round)
		last := seats[M-1]
		copy(seats[2:], seats[1:M-1])
		seats[1] = last
	}
	if directions == 2 {
		for _, round := range rounds[:M-1] {
			rev := make([]Pair, len(round))
			for i, p := range round {
				rev[i] = Pair{A: p.B, B: p.A}
			}
			rounds = append(rounds, rev)
		}
	}
	return rounds
}

// greedyRounds puts each pair into the first round where neither NIC is
// booked.
func greedyRounds(group []Pair) [][]Pair {
	var rounds [][]Pair
	var booked []map[NIC]bool
	for _, p := range group {
		r := 0
		for r < len(rounds) && (booked[r][p.A] || booked[r][p.B]) {
			r++
		}
		if r == len(rounds) {
			rounds = append(rounds, nil)
			booked = append(booked, map[NIC]bool{})
		}
		rounds[r] = append(rounds[r], p)
		booked[r][p.A], booked[r][p.B] = true, true
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
