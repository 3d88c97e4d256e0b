package fleet

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkDisjoint fails unless rounds hold every pair exactly once, are
// Disjoint, book no NIC twice and hold at most parallel pairs.
func checkDisjoint(t *testing.T, what string, pairs []Pair, rounds []Round, parallel int) {
	t.Helper()
	want := map[Pair]int{}
	for _, p := range pairs {
		want[p]++
	}
	for r, round := range rounds {
		if round.Kind != Disjoint {
			t.Errorf("%s: round %d is %s, want %s", what, r, round.Kind, Disjoint)
		}
		if len(round.Pairs) == 0 {
			t.Errorf("%s: round %d is empty", what, r)
		}
		if parallel > 0 && len(round.Pairs) > parallel {
			t.Errorf("%s: round %d has %d pairs, cap %d", what, r, len(round.Pairs), parallel)
		}
		booked := map[NIC]bool{}
		for _, p := range round.Pairs {
			for _, n := range []NIC{p.A, p.B} {
				if booked[n] {
					t.Errorf("%s: round %d books NIC %s twice: %s", what, r, nicString(n), pairString(round.Pairs))
				}
				booked[n] = true
			}
			want[p]--
		}
	}
	for p, left := range want {
		if left != 0 {
			t.Errorf("%s: pair %s scheduled %d times, want 1", what, pairString([]Pair{p}), 1-left)
		}
	}
}

func TestScheduleAllPairsCircle(t *testing.T) {
	for n := 2; n <= 40; n++ {
		for _, both := range []bool{false, true} {
			pairs, err := AllPairs.Pairs(names(n), PatternOptions{BothDirections: both})
			if err != nil {
				t.Fatal(err)
			}
			rounds := Schedule(pairs, 0)
			what := fmt.Sprintf("all-pairs N=%d both=%v", n, both)
			checkDisjoint(t, what, pairs, rounds, 0)
			wantRounds, perRound := n-1, n/2
			if n%2 == 1 {
				wantRounds = n // one host idles each round
			}
			if both {
				wantRounds *= 2
			}
			if len(rounds) != wantRounds {
				t.Errorf("%s: %d rounds, want %d", what, len(rounds), wantRounds)
			}
			for r, round := range rounds {
				if len(round.Pairs) != perRound {
					t.Errorf("%s: round %d has %d pairs, want %d", what, r, len(round.Pairs), perRound)
				}
			}
		}
	}
}

func TestScheduleRail(t *testing.T) {
	for n := 2; n <= 20; n++ {
		hosts := names(n)
		for i := range hosts {
			hosts[i].Devices = []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}
		}
		pairs, err := Rail.Pairs(hosts, PatternOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rounds := Schedule(pairs, 0)
		what := fmt.Sprintf("rail N=%d", n)
		checkDisjoint(t, what, pairs, rounds, 0)
		want := n - 1
		if n%2 == 1 {
			want = n
		}
		// The four rails share no NIC, so they share rounds.
		if len(rounds) != want {
			t.Errorf("%s: %d rounds, want %d", what, len(rounds), want)
		}
		for r, round := range rounds {
			if len(round.Pairs) != 4*(n/2) {
				t.Errorf("%s: round %d has %d pairs, want %d", what, r, len(round.Pairs), 4*(n/2))
			}
		}
	}
}

func TestScheduleRing(t *testing.T) {
	for n := 2; n <= 40; n++ {
		pairs, err := Ring.Pairs(names(n), PatternOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rounds := Schedule(pairs, 0)
		what := fmt.Sprintf("ring N=%d", n)
		checkDisjoint(t, what, pairs, rounds, 0)
		want := map[bool]int{true: 2, false: 3}[n%2 == 0] // an odd cycle needs a third colour
		if n == 2 {
			want = 1
		}
		if len(rounds) != want {
			t.Errorf("%s: %d rounds, want %d", what, len(rounds), want)
		}
	}
}

// Greedy colouring of arbitrary pair lists: the invariants, and at most
// 2*degree-1 rounds.
func TestScheduleExplicitPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	for n := 2; n <= 40; n++ {
		hosts := names(n)
		var list [][2]string
		seen := map[[2]string]bool{}
		for range rng.IntN(3 * n) {
			a, b := rng.IntN(n), rng.IntN(n)
			pair := [2]string{hosts[a].Name, hosts[b].Name}
			if a != b && !seen[pair] {
				seen[pair] = true
				list = append(list, pair)
			}
		}
		if len(list) == 0 {
			continue
		}
		pairs, err := ExplicitPairs.Pairs(hosts, PatternOptions{Pairs: list})
		if err != nil {
			t.Fatal(err)
		}
		degree := map[NIC]int{}
		maxDegree := 0
		for _, p := range pairs {
			for _, nic := range []NIC{p.A, p.B} {
				degree[nic]++
				maxDegree = max(maxDegree, degree[nic])
			}
		}
		rounds := Schedule(pairs, 0)
		what := fmt.Sprintf("pairs N=%d (%d pairs)", n, len(pairs))
		checkDisjoint(t, what, pairs, rounds, 0)
		if len(rounds) > 2*maxDegree-1 {
			t.Errorf("%s: %d rounds, more than 2*%d-1", what, len(rounds), maxDegree)
		}
	}
}

func TestScheduleParallel(t *testing.T) {
	for n := 2; n <= 40; n++ {
		pairs, err := AllPairs.Pairs(names(n), PatternOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uncapped := Schedule(pairs, 0)
		for _, parallel := range []int{1, 2, 3, 5, 8} {
			rounds := Schedule(pairs, parallel)
			what := fmt.Sprintf("all-pairs N=%d parallel=%d", n, parallel)
			checkDisjoint(t, what, pairs, rounds, parallel)
			want := 0
			for _, r := range uncapped {
				want += (len(r.Pairs) + parallel - 1) / parallel
			}
			if len(rounds) != want {
				t.Errorf("%s: %d rounds, want %d", what, len(rounds), want)
			}
			if parallel == 1 && len(rounds) != len(pairs) {
				t.Errorf("%s: %d rounds for %d pairs", what, len(rounds), len(pairs))
			}
		}
	}
}

func TestIncastRounds(t *testing.T) {
	for n := 2; n <= 40; n++ {
		pairs, err := Incast.Pairs(names(n), PatternOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rounds, err := Incast.Rounds(pairs, n-1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rounds) != n {
			t.Errorf("incast N=%d: %d rounds, want one per receiver", n, len(rounds))
		}
		count := map[Pair]int{}
		for r, round := range rounds {
			if round.Kind != IncastRound || len(round.Pairs) != n-1 {
				t.Errorf("incast N=%d round %d: %s with %d pairs, want %s with %d", n, r, round.Kind, len(round.Pairs), IncastRound, n-1)
			}
			senders := map[NIC]bool{}
			for _, p := range round.Pairs {
				// The receiver is shared by design; everything else is
				// still booked once.
				if p.B != round.Pairs[0].B {
					t.Errorf("incast N=%d round %d mixes receivers: %s", n, r, pairString(round.Pairs))
				}
				if senders[p.A] || p.A == p.B {
					t.Errorf("incast N=%d round %d books sender %s twice", n, r, nicString(p.A))
				}
				senders[p.A] = true
				count[p]++
			}
		}
		for _, p := range pairs {
			if count[p] != 1 {
				t.Errorf("incast N=%d: pair %s scheduled %d times", n, pairString([]Pair{p}), count[p])
			}
		}
	}
	pairs, _ := Incast.Pairs(names(4), PatternOptions{})
	_, err := Incast.Rounds(pairs, 2)
	want := "parallel: 2 is below the 3 senders of an incast round, which must run together; raise parallel to 3 or remove it"
	if err == nil || err.Error() != want {
		t.Errorf("incast with parallel 2: error %v, want %s", err, want)
	}
}

func TestPatternRoundsDisjoint(t *testing.T) {
	pairs, _ := Ring.Pairs(names(5), PatternOptions{})
	rounds, err := Ring.Rounds(pairs, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkDisjoint(t, "ring.Rounds", pairs, rounds, 0)
	if _, err := Pattern("star").Rounds(pairs, 0); err == nil {
		t.Error("an unknown pattern scheduled rounds")
	}
}
