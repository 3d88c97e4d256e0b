package doctor

import (
	"errors"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

// TestWithVerbs: a verbs listing gives the doctor each port's MTUs and
// the GID tables; a listing that fails leaves the host as it was, for
// the MTU checks to say cannot_tell rather than guess.
func TestWithVerbs(t *testing.T) {
	devs := []rdma.Device{{Name: "mlx5_0", Ports: []rdma.Port{{Num: 1, ActiveMTU: 4096, MaxMTU: 4096}, {Num: 2}}}}
	for _, tc := range []struct {
		name   string
		list   func() ([]rdma.Device, error)
		verbs  int  // devices in Env.Verbs
		known  bool // mlx5_0 port 1's MTU is known
		active int
	}{
		{name: "listed", list: func() ([]rdma.Device, error) { return devs, nil }, verbs: 1, known: true, active: 4096},
		{name: "no verbs", list: func() ([]rdma.Device, error) { return nil, errors.New("no libibverbs") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := Env{Sys: "/s", Device: "mlx5_0", Port: 1}
			env := base.WithVerbs(tc.list)
			if env.Sys != base.Sys || env.Device != base.Device || env.Port != base.Port {
				t.Errorf("the host's files and restriction changed: %+v", env)
			}
			if len(env.Verbs) != tc.verbs {
				t.Errorf("%d devices from verbs, want %d", len(env.Verbs), tc.verbs)
			}
			if !tc.known {
				if env.PortMTU != nil {
					t.Error("an MTU source without a verbs listing")
				}
				return
			}
			if active, maximum, ok := env.PortMTU("mlx5_0", 1); !ok || active != tc.active || maximum != 4096 {
				t.Errorf("port 1's MTU: %d, %d, %v", active, maximum, ok)
			}
			if _, _, ok := env.PortMTU("mlx5_0", 2); ok {
				t.Error("an MTU for port 2, which verbs lists without one")
			}
			if _, _, ok := env.PortMTU("mlx5_1", 1); ok {
				t.Error("an MTU for a device verbs did not list")
			}
		})
	}
}
