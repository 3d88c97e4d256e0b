package runner

import (
	"context"
	"testing"

	"github.com/rdmarun/rdmarun/runner/report"
)

// TestExecuteFleetLinkGbps: a threshold on link_gbps is judged against
// host A's port rate, which the relay carries back; a relay that carries
// none leaves it 0, and the verdict shows it.
func TestExecuteFleetLinkGbps(t *testing.T) {
	load := func(t *testing.T) *Scenario {
		sc := fleetScenario(t, 3, nil)
		link, err := Load("testdata/coordinator/link.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		link.Fleet = sc.Fleet
		return link
	}
	// Every test measures 8 Gb/s: half of A's 10 Gb/s port passes, half
	// of A's 100 Gb/s one does not.
	rates := []float64{10, 100, 10}
	rep := runFleet(t, context.Background(), load(t), &fakeRelay{link: func(c relayCall) float64 { return rates[c.A] }})
	if len(rep.Runs) != 3 {
		t.Fatalf("%d runs, want one per pair of 3 hosts", len(rep.Runs))
	}
	seen := map[report.Status]int{}
	for _, r := range rep.Runs {
		seen[r.Status]++
		a := r.Pair.Pair.A.Host
		want := report.Passed
		if rates[a] == 100 {
			want = report.Failed
		}
		if len(r.Verdicts) != 1 {
			t.Fatalf("%s: verdicts %+v, want one", pairOf(r), r.Verdicts)
		}
		v := r.Verdicts[0]
		if r.Status != want || v.Values["link_gbps"] != rates[a] {
			t.Errorf("%s: %s with link_gbps %v, want %s with host %d's %v", pairOf(r), r.Status, v.Values["link_gbps"], want, a, rates[a])
		}
	}

	if seen[report.Passed] == 0 || seen[report.Failed] == 0 {
		t.Errorf("statuses %v: the pairs must include an A of each rate", seen)
	}

	// A responder of an older release sends no rate: 0, never another
	// host's.
	rep = runFleet(t, context.Background(), load(t), &fakeRelay{})
	for _, r := range rep.Runs {
		if v := r.Verdicts[0]; v.Values["link_gbps"] != 0 {
			t.Errorf("%s without a carried rate: link_gbps %v, want 0", pairOf(r), v.Values["link_gbps"])
		}
	}
}
