package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/golden"
)

// TestLoadFleetOpenFiles loads each fleet of testdata/fdlimit under a set
// open-file limit and compares what Load says with the golden file
// testdata/fdlimit/NAME.want: nothing (ok) when the rounds fit, else the
// need, the limit and the fixes, at parallel: or hosts:/pattern:.
// Refresh with go test -run TestLoadFleetOpenFiles -update.
func TestLoadFleetOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		limit uint64 // 0: the limit cannot be read
	}{
		{name: "ips-1000-fits-1024", file: "ips-1000.yaml", limit: 1024},
		{name: "ips-1000-over-512", file: "ips-1000.yaml", limit: 512},
		{name: "names-1000-over-1024", file: "names-1000.yaml", limit: 1024},
		{name: "names-1000-fits-2048", file: "names-1000.yaml", limit: 2048},
		{name: "names-1000-unknown-limit", file: "names-1000.yaml"},
		{name: "names-1000-parallel-over-512", file: "names-1000-parallel.yaml", limit: 512},
		{name: "ring-1100-default-over-540", file: "ring-1100.yaml", limit: 540},
		{name: "ring-1100-default-fits-544", file: "ring-1100.yaml", limit: 544},
		{name: "incast-100-over-100", file: "incast-100.yaml", limit: 100},
		{name: "small-over-20", file: "small.yaml", limit: 20},
		{name: "small-fits-40", file: "small.yaml", limit: 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old func() (uint64, error)) { openFileLimit = old }(openFileLimit)
			openFileLimit = func() (uint64, error) {
				if tc.limit == 0 {
					return 0, errors.ErrUnsupported
				}
				return tc.limit, nil
			}
			got := "ok\n"
			if _, err := Load(filepath.Join("testdata", "fdlimit", tc.file), nil); err != nil {
				got = err.Error() + "\n"
			}
			golden.Check(t, filepath.Join("fdlimit", tc.name+".want"), []byte(got))
		})
	}
}

// Every golden file of testdata/fdlimit is one TestLoadFleetOpenFiles
// compares, so none is left behind by a renamed case.
func TestFDLimitGoldenCovered(t *testing.T) {
	src, err := os.ReadFile("fdlimit_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/fdlimit/*.want")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, f := range files {
		if !strings.Contains(string(src), `name: "`+strings.TrimSuffix(filepath.Base(f), ".want")+`"`) {
			t.Errorf("%s is compared by no case", f)
		}
	}
}

// TestRelaysAtOnce: the relays a fleet needs files for include its
// confirmation's rounds, which schedule the bad pairs afresh and can be
// larger than the first rounds (here cut to one pair each, as a Fleet
// built by hand may be), up to one pair per two NICs.
func TestRelaysAtOnce(t *testing.T) {
	one := func(pairs ...fleet.Pair) []fleet.Round {
		var rounds []fleet.Round
		for _, p := range pairs {
			rounds = append(rounds, fleet.Round{Kind: fleet.Disjoint, Pairs: []fleet.Pair{p}})
		}
		return rounds
	}
	pair := func(a, b int) fleet.Pair { return fleet.Pair{A: fleet.NIC{Host: a}, B: fleet.NIC{Host: b}} }
	pairs := []fleet.Pair{pair(0, 1), pair(2, 3), pair(4, 5)}
	hosts := hostsNamed("a", "b", "c", "d", "e", "f")
	for _, tc := range []struct {
		name       string
		fl         Fleet
		want       int
		wantCapped bool
	}{
		{name: "no confirmation", fl: Fleet{Hosts: hosts, Pattern: fleet.ExplicitPairs, Pairs: pairs, Rounds: one(pairs...)}, want: 1},
		{name: "confirmation", fl: Fleet{Hosts: hosts, Pattern: fleet.ExplicitPairs, Pairs: pairs, Rounds: one(pairs...), Confirm: 1}, want: 3},
		{name: "confirmation under parallel", fl: Fleet{Hosts: hosts, Pattern: fleet.ExplicitPairs, Pairs: pairs, Rounds: one(pairs...), Confirm: 1, Parallel: 2}, want: 2, wantCapped: true},
		{name: "confirmation of fewer pairs than NICs", fl: Fleet{Hosts: hosts, Pattern: fleet.ExplicitPairs, Pairs: pairs[:2], Rounds: one(pairs[:2]...), Confirm: 1}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, capped := relaysAtOnce(&tc.fl)
			if got != tc.want || capped != tc.wantCapped {
				t.Errorf("relaysAtOnce %d (capped %v), want %d (capped %v)", got, capped, tc.want, tc.wantCapped)
			}
		})
	}
}
