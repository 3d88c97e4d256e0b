package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"testing"
)

// planFleet is a fleet of n hosts with devs devices each (none: the
// serve's default device).
func planFleet(n, devs int) []Host {
	hosts := make([]Host, n)
	for i := range hosts {
		hosts[i].Name = "node" + strconv.Itoa(i)
		for d := range devs {
			hosts[i].Devices = append(hosts[i].Devices, "mlx5_"+strconv.Itoa(d))
		}
	}
	return hosts
}

func plan(tb testing.TB, p Pattern, hosts []Host, opt PatternOptions, parallel int) []Round {
	tb.Helper()
	pairs, err := p.Pairs(hosts, opt)
	if err != nil {
		tb.Fatal(err)
	}
	rounds, err := p.Rounds(pairs, parallel)
	if err != nil {
		tb.Fatal(err)
	}
	return rounds
}

// planHash digests every round's kind and pairs in order, so any change
// to the plan (a pair moved, reordered or reversed) changes it.
func planHash(rounds []Round) string {
	h := sha256.New()
	for r, round := range rounds {
		fmt.Fprintf(h, "round %d %s %d\n", r, round.Kind, len(round.Pairs))
		for _, p := range round.Pairs {
			fmt.Fprintf(h, "%d/%s>%d/%s\n", p.A.Host, p.A.Device, p.B.Host, p.B.Device)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestPlanUnchanged pins the plans as the scheduler made them before its
// memory was cut: the rounds, their order and their pairs must not move.
func TestPlanUnchanged(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        Pattern
		n, devs  int
		opt      PatternOptions
		parallel int
		want     string
	}{
		{"all-pairs 64", AllPairs, 64, 1, PatternOptions{}, 0, "fe48fde6d4e432aa8712626630c34159f85f3ff1b88dad66b148f85698d03fa9"},
		{"all-pairs 256", AllPairs, 256, 1, PatternOptions{}, 0, "a1f5f72497f42947d0126ccf893595b7fcb70908dc588bf3663f1148864531d8"},
		{"all-pairs 1000", AllPairs, 1000, 1, PatternOptions{}, 0, "4a22c3d42f229591f6db233ce4917a79611a9b9053c357bf149827d42661bc35"},
		{"all-pairs 63 default device", AllPairs, 63, 0, PatternOptions{}, 0, "68bd2db3d5ed37f2c9c12bb47881ad0c73080b15b5d6918a97af2bdfbd7110d1"},
		{"all-pairs 64 both", AllPairs, 64, 1, PatternOptions{BothDirections: true}, 0, "2719749a44dff4f5474a6dfe179cd30d1b2b4ee189c98273961fbc1aaf086bb3"},
		{"all-pairs 65 parallel 7", AllPairs, 65, 1, PatternOptions{}, 7, "3aff8baaa4841f387461685cb16b8edf45455c4f7652184f3b3da6277f2bcbeb"},
		{"rail 33x2", Rail, 33, 2, PatternOptions{}, 0, "ff0eae474187ccfe159eb9a7ef45691e68be012bb2bee805124d23c0d0e8e16b"},
		{"ring 64", Ring, 64, 1, PatternOptions{}, 0, "46b3005d8b364f1049e4822e1a97c46cdf630486387d6084f9dee36404b7102f"},
		{"incast 16", Incast, 16, 1, PatternOptions{}, 0, "ca74b1ac18872275744d6205013a3530e4c836c4dfa0b6c3d76472bd967179cb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := planHash(plan(t, c.p, planFleet(c.n, c.devs), c.opt, c.parallel))
			if got != c.want {
				t.Errorf("plan hash %s, want %s", got, c.want)
			}
		})
	}
}

func BenchmarkPlanAllPairs(b *testing.B) {
	for _, n := range []int{64, 256, 1000, 2000} {
		hosts := planFleet(n, 1)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plan(b, AllPairs, hosts, PatternOptions{}, 0)
			}
		})
	}
}
