package targets

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/mesh"
	"github.com/rdmarun/rdmarun/exporter/prober"
)

// fiveNodes are a fleet's targets, this node among them at 10.0.0.1.
const fiveNodes = `
    - {name: n0, address: 10.0.0.1:18520, module: default}
    - {name: n1, address: 10.0.0.2:18520, module: default}
    - {name: n2, address: 10.0.0.3:18520, module: default}
    - {name: n3, address: 10.0.0.4:18520, module: default}
    - {name: n4, address: 10.0.0.5:18520, module: default}
`

func parseMesh(t *testing.T, mesh string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(modules + "mesh: " + mesh + "\ntargets:\n  static:\n" + fiveNodes))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// probeSources lists the "source target" pairs of rdma_probe_success on
// reg, sorted.
func probeSources(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	var out []string
	for _, l := range successLabels(t, reg) {
		out = append(out, l["source"]+" "+l["target"])
	}
	slices.Sort(out)
	return out
}

// TestManagerMesh: with a mesh, the node probes exactly its share of the
// discovered targets, the same share mesh.Choose gives, never itself, and
// says so in its self-metrics; unnamed, it takes the name of the target
// at its responder's address as its source label.
func TestManagerMesh(t *testing.T) {
	for _, tc := range []struct {
		name     string
		id       Identity
		mesh     string
		wantSelf string
	}{
		{name: "named by the config", mesh: "{max_targets: 2, source: n0}", wantSelf: "n0"},
		{name: "named by the flag", id: Identity{Source: "n0"}, mesh: "{max_targets: 2, source: other}", wantSelf: "n0"},
		{name: "found by its responder's address", id: Identity{Responder: "10.0.0.1:18520"}, mesh: "{max_targets: 2}", wantSelf: "n0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			f := &fakePeers{peers: map[string]prober.Peer{}}
			m := NewManager(reg, prober.RunFunc(f.transport), "rxe0", tc.id, slog.New(slog.DiscardHandler))
			t.Cleanup(m.Stop)
			cfg := parseMesh(t, tc.mesh)
			m.Apply(context.Background(), cfg)

			epoch := mesh.Epoch(time.Now(), cfg.Mesh.Rotate)
			self := mesh.Self{Name: tc.wantSelf}
			want := []string{}
			for _, tg := range mesh.Choose(cfg.Mesh, self, cfg.Targets.Static, epoch).Targets {
				want = append(want, tc.wantSelf+" "+tg.Name)
			}
			got := probeSources(t, reg)
			if len(got) != 2 || !slices.Equal(got, want) {
				t.Fatalf("probes (source target): %q, want mesh.Choose's %q", got, want)
			}
			for _, p := range got {
				if p == tc.wantSelf+" "+tc.wantSelf {
					t.Errorf("the node probes itself: %q", got)
				}
			}
			if s := m.Source(); s != tc.wantSelf {
				t.Errorf("Source() = %q, want %q", s, tc.wantSelf)
			}
			for name, want := range map[string]float64{
				"rdmarun_exporter_mesh_targets_known":    5,
				"rdmarun_exporter_mesh_targets_selected": 2,
			} {
				if got := gauge(t, reg, name); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			// The epoch may have turned since; it is never behind.
			if got := gauge(t, reg, "rdmarun_exporter_mesh_epoch"); got < float64(epoch) || got > float64(epoch+1) {
				t.Errorf("rdmarun_exporter_mesh_epoch = %v, want %d", got, epoch)
			}
		})
	}
}

// TestManagerWithoutMesh: no mesh section probes every target, as before
// the mesh existed, and labels them with the host name.
func TestManagerWithoutMesh(t *testing.T) {
	m, reg, _ := newManager(t)
	m.Apply(context.Background(), parse(t, fiveNodes))
	got := probeSources(t, reg)
	if len(got) != 5 {
		t.Fatalf("probes: %q, want all 5 targets", got)
	}
	if got[0] != "node-a n0" {
		t.Errorf("first probe %q, want source node-a (the flag) probing n0", got[0])
	}
	if k := gauge(t, reg, "rdmarun_exporter_mesh_targets_selected"); k != 5 {
		t.Errorf("targets selected %v without a mesh, want all 5", k)
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series %s", name)
	return 0
}

// TestManagerMeshWildcardResponder: a responder on every address finds
// itself at any of this host's addresses on its port (here loopback), and
// only on its port.
func TestManagerMeshWildcardResponder(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := &fakePeers{peers: map[string]prober.Peer{}}
	m := NewManager(reg, prober.RunFunc(f.transport), "rxe0", Identity{Responder: ":18520"}, slog.New(slog.DiscardHandler))
	t.Cleanup(m.Stop)
	c, err := config.Parse([]byte(modules + `mesh: {max_targets: 2}
targets:
  static:
    - {name: me, address: 127.0.0.1:18520, module: default}
    - {name: other-port, address: 127.0.0.1:18521, module: default}
    - {name: far, address: 10.0.0.9:18520, module: default}
`))
	if err != nil {
		t.Fatal(err)
	}
	m.Apply(context.Background(), c)
	want := []string{"me far", "me other-port"}
	if got := probeSources(t, reg); !slices.Equal(got, want) {
		t.Errorf("probes (source target): %q, want %q", got, want)
	}
}
