package runner

import (
	"context"
	"fmt"
	"testing"

	"github.com/rdmarun/rdmarun/fleet"
)

// TestExecuteFleetRecordsGrouping: the grouping a fleet loads with is the
// one its report records for the writers, above report.LargeFleetHosts by
// the group_by label, and not at all at or below it.
func TestExecuteFleetRecordsGrouping(t *testing.T) {
	for _, tc := range []struct {
		hosts      int
		wantGroups bool
	}{{64, false}, {66, true}} {
		t.Run(fmt.Sprint(tc.hosts), func(t *testing.T) {
			sc := fleetScenario(t, tc.hosts, func(f *Fleet) {
				f.Pattern, f.GroupBy = fleet.Ring, "rack"
				for i := range f.Hosts {
					f.Hosts[i].Labels = map[string]string{"rack": fmt.Sprintf("r%d", i/33)}
				}
			})
			rep := runFleet(t, context.Background(), sc, &fakeRelay{})
			if rep.Fleet.GroupBy != "rack" {
				t.Errorf("group_by %q, want rack", rep.Fleet.GroupBy)
			}
			if !tc.wantGroups {
				if rep.Fleet.Groups != nil {
					t.Errorf("%d hosts: groups %v, want none at this size", tc.hosts, rep.Fleet.Groups)
				}
				return
			}
			if len(rep.Fleet.Groups) != tc.hosts || rep.Fleet.Groups[0] != "r0" || rep.Fleet.Groups[65] != "r1" {
				t.Errorf("groups %v, want r0 for the first 33 hosts and r1 after", rep.Fleet.Groups)
			}
		})
	}
}
