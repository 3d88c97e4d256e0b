package soak

import (
	"reflect"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

// TestPlanIsTheSeeds: every process of a soak computes the plan on its
// own, so the same seed must give the same plan, and SOAK_SEED replays.
func TestPlanIsTheSeeds(t *testing.T) {
	a, b := Plan(42, 500), Plan(42, 500)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two plans from seed 42 differ")
	}
	if reflect.DeepEqual(a, Plan(43, 500)) {
		t.Fatal("seeds 42 and 43 gave the same plan")
	}
	// A longer run starts with the shorter one's tests.
	if !reflect.DeepEqual(a[:100], Plan(42, 100)) {
		t.Fatal("the first 100 tests of a 500-test plan are not the 100-test plan")
	}
}

// TestPlanMix: the default CI soak (120 tests) already has every
// misbehaviour, op, measure and mode, and a 10,000-test plan spans the
// sizes and QP counts; every good spec is one the engine accepts.
func TestPlanMix(t *testing.T) {
	for _, c := range []struct {
		n, seed            int
		wantSizes, wantQPs bool
	}{
		{n: 120, seed: 1},
		{n: 120, seed: 2},
		{n: 10000, seed: 3, wantSizes: true, wantQPs: true},
	} {
		plan := Plan(uint64(c.seed), c.n)
		misbehaving := map[Misbehaviour]int{}
		ops := map[rdma.Op]bool{}
		measures := map[rdma.Measure]bool{}
		modes := map[rdma.Mode]bool{}
		sizes := map[int]bool{}
		qps := map[int]bool{}
		kept := 0
		for i, cs := range plan {
			if cs.Index != i {
				t.Fatalf("case %d has index %d", i, cs.Index)
			}
			if (i%MisbehaveEvery == MisbehaveEvery-1) != (cs.Misbehaviour != Good) {
				t.Errorf("case %d: %s, want one client in %d misbehaving", i, cs.Misbehaviour, MisbehaveEvery)
			}
			misbehaving[cs.Misbehaviour]++
			if cs.Misbehaviour == KilledMidTest || cs.Misbehaviour == StallPastStep || cs.Misbehaviour == Good {
				if _, err := cs.Spec.Complete(); err != nil {
					t.Errorf("case %d (%s): %v", i, cs.Misbehaviour, err)
				}
			}
			if cs.Misbehaviour != Good {
				continue
			}
			s := cs.Spec
			ops[s.Op], measures[s.Measure], modes[s.Mode] = true, true, true
			sizes[s.Size], qps[s.QPs] = true, true
			if s.Size < 2 && !s.Op.Atomic() || s.Size > maxSize || s.QPs < 1 || s.QPs > 8 {
				t.Errorf("case %d: %d B on %d QPs, outside 2 B..1 MiB, 1..8 QPs", i, s.Size, s.QPs)
			}
			if s.Size*s.QPs > inFlightBytes {
				t.Errorf("case %d: %d B on %d QPs is more than %d B in flight", i, s.Size, s.QPs, inFlightBytes)
			}
			if cs.Runs > 1 {
				kept++
			}
		}
		for m := KilledMidTest; m < misbehaviourEnd; m++ {
			if misbehaving[m] == 0 {
				t.Errorf("%d tests, seed %d: no %s client", c.n, c.seed, m)
			}
		}
		if len(ops) != 7 || len(measures) != 2 || len(modes) != 2 || kept == 0 {
			t.Errorf("%d tests, seed %d: %d ops, %d measures, %d modes, %d kept sessions; want all of each and some kept", c.n, c.seed, len(ops), len(measures), len(modes), kept)
		}
		if c.wantSizes {
			for size := 2; size <= maxSize; size *= 2 {
				if !sizes[size] {
					t.Errorf("%d tests: no %d B test", c.n, size)
				}
			}
		}
		if c.wantQPs {
			for n := 1; n <= 8; n++ {
				if !qps[n] {
					t.Errorf("%d tests: no test on %d QPs", c.n, n)
				}
			}
		}
	}
}
