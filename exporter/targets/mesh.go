package targets

import (
	"cmp"
	"context"
	"net"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/mesh"
)

// Identity is how this node knows itself among the targets it discovers:
// its name and the address its own responder answers on.
type Identity struct {
	// Source is --mesh.source; empty takes mesh.source of the config,
	// else the host name.
	Source string
	// Responder is the listen address (host:port) of this node's own
	// responder; empty when it does not serve.
	Responder string
}

// meshMetrics are the manager's self-metrics of the mesh.
type meshMetrics struct {
	known, selected, epoch prometheus.Gauge
}

func newMeshMetrics(reg prometheus.Registerer) *meshMetrics {
	m := &meshMetrics{
		known: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_mesh_targets_known",
			Help: "Targets discovered, this node included when it is listed.",
		}),
		selected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_mesh_targets_selected",
			Help: "Targets this node probes in the current epoch: its share of the mesh, plus the peers kept by mesh.always.",
		}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_mesh_epoch",
			Help: "The mesh's current rotation period: seconds since the Unix epoch divided by mesh.rotate; 0 without a mesh.",
		}),
	}
	reg.MustRegister(m.known, m.selected, m.epoch)
	return m
}

// namedSource is the node's name when the operator gave one: the flag,
// else the config's mesh.source; empty otherwise.
func (m *Manager) namedSource(cfg *config.Config) string {
	return cmp.Or(m.id.Source, cfg.Mesh.Source)
}

// Source is the name the probes carry as their source label; before the
// first target set, the host name.
func (m *Manager) Source() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cmp.Or(m.source, config.DefaultSource())
}

// self describes this node to the mesh under the name source.
func (m *Manager) self(cfg *config.Config, source string) mesh.Self {
	s := mesh.Self{Name: source, Labels: cfg.Mesh.Labels}
	host, port, err := net.SplitHostPort(m.id.Responder)
	if err != nil {
		return s
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		s.Address = m.id.Responder
		return s
	}
	// A responder on every address is this node at any of its own
	// addresses on that port. The addresses are read once per choice, not
	// once per target: a fleet lists thousands.
	local := localIPs()
	s.Local = func(hostport string) bool {
		h, p, err := net.SplitHostPort(hostport)
		if err != nil || p != port {
			return false
		}
		ip := net.ParseIP(h)
		return ip != nil && (ip.IsLoopback() || slices.ContainsFunc(local, ip.Equal))
	}
	return s
}

// localIPs are this host's interface addresses; none when they cannot be
// read, so that only loopback counts as this node.
func localIPs() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP)
		}
	}
	return out
}

// follow takes a discovered target set and probes this epoch's share of
// it. Discovery and the epoch timer both call it, one at a time.
func (m *Manager) follow(ctx context.Context, cfg *config.Config, discovered []config.Target) {
	m.selMu.Lock()
	defer m.selMu.Unlock()
	m.discovered = discovered
	m.reselect(ctx, cfg)
}

// reselect probes the current epoch's share of the last discovered set.
// The caller holds selMu.
//
// Unnamed, the node takes the name of the target that is itself (found by
// its responder's address), else its host name: then the source label of
// its probes is the target label the other nodes' probes give it, which
// the localisation rules join on, with no per-node setting (a DaemonSet
// shares one config).
func (m *Manager) reselect(ctx context.Context, cfg *config.Config) {
	named := m.namedSource(cfg)
	source := cmp.Or(named, config.DefaultSource())
	probed := m.discovered
	var epoch uint64
	if cfg.Mesh.Enabled() {
		epoch = mesh.Epoch(time.Now(), cfg.Mesh.Rotate)
		sel := mesh.Choose(cfg.Mesh, m.self(cfg, source), m.discovered, epoch)
		probed = sel.Targets
		if named == "" {
			source = sel.SelfName
		}
	}
	m.meshMetrics.known.Set(float64(len(m.discovered)))
	m.meshMetrics.selected.Set(float64(len(probed)))
	m.meshMetrics.epoch.Set(float64(epoch))
	m.setTargets(ctx, cfg, probed, source)
}

// rotate chooses again at every epoch's start until dctx (the discovery
// of cfg) ends. Every node's clock turns the epoch at the same moment, so
// the fleet moves to the next mesh together; a node whose clock is off
// probes the old or new mesh for that long, which costs balance, not
// correctness.
func (m *Manager) rotate(dctx, ctx context.Context, cfg *config.Config) {
	for {
		next := mesh.Next(mesh.Epoch(time.Now(), cfg.Mesh.Rotate), cfg.Mesh.Rotate)
		t := time.NewTimer(time.Until(next))
		select {
		case <-dctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		m.selMu.Lock()
		if m.discovered != nil {
			m.reselect(ctx, cfg)
		}
		m.selMu.Unlock()
	}
}
