package runner

import (
	"fmt"
	"testing"

	"github.com/rdmarun/rdmarun/fleet"
)

func TestSuspectEnds(t *testing.T) {
	var hosts []fleet.Host
	for i := range 12 {
		hosts = append(hosts, fleet.Host{Name: fmt.Sprintf("n%d", i), Addr: fmt.Sprintf("10.0.0.%d:18520", i)})
	}
	tests := []struct {
		name     string
		suspects []fleet.Suspect
		want     string
	}{
		{"host", []fleet.Suspect{{Kind: fleet.SuspectHost, Name: "n3"}}, "[n3/]"},
		{"rail NIC", []fleet.Suspect{{Kind: fleet.SuspectNIC, Name: "n3/mlx5_1"}}, "[n3/mlx5_1]"},
		{"link, worst first, each end once", []fleet.Suspect{
			{Kind: fleet.SuspectLink, Name: "n1 <-> n2"},
			{Kind: fleet.SuspectLink, Name: "n2 <-> n5"},
		}, "[n1/ n2/ n5/]"},
		{"rail link", []fleet.Suspect{{Kind: fleet.SuspectLink, Name: "n1/mlx5_0 <-> n2/mlx5_0"}}, "[n1/mlx5_0 n2/mlx5_0]"},
		{"a name no host has is left out", []fleet.Suspect{{Kind: fleet.SuspectHost, Name: "gone"}, {Kind: fleet.SuspectNIC, Name: "gone/mlx5_0"}}, "[]"},
		{"at most maxDoctorEnds", []fleet.Suspect{
			{Name: "n0 <-> n1"}, {Name: "n2 <-> n3"}, {Name: "n4 <-> n5"}, {Name: "n6 <-> n7"}, {Name: "n8 <-> n9"}, {Name: "n10 <-> n11"},
		}, "[n0/ n1/ n2/ n3/ n4/ n5/ n6/ n7/]"},
	}
	for _, tt := range tests {
		var got []string
		for _, e := range suspectEnds(hosts, tt.suspects) {
			got = append(got, e.host.Name+"/"+e.device)
		}
		if s := fmt.Sprint(got); s != tt.want {
			t.Errorf("%s: ends %s, want %s", tt.name, s, tt.want)
		}
	}
}
