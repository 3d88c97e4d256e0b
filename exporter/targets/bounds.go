package targets

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// The bounds of the config that can leave discovered targets unprobed,
// as the limit label of rdmarun_exporter_targets_over_limit names them:
// the key an operator raises.
const (
	limitPerModule   = "targets.max_per_module"
	limitProbeSeries = "targets.max_probe_series"
)

var limits = []string{limitPerModule, limitProbeSeries}

// boundMetrics say how many discovered targets the bounds leave unprobed.
type boundMetrics struct {
	overLimit *prometheus.GaugeVec
	// last is how many each limit left out at the last set, to log a
	// limit once when it starts and once when it stops leaving targets
	// out, not at every change of a churning set. Under Manager.mu.
	last map[string]int
}

func newBoundMetrics(reg prometheus.Registerer) *boundMetrics {
	b := &boundMetrics{overLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rdmarun_exporter_targets_over_limit",
		Help: "Targets discovered (and chosen by the mesh) but not probed, because probing them would pass the config key in the limit label; raise it to probe them.",
	}, []string{"limit"}), last: map[string]int{}}
	// At 0 from the start, so that an alert on > 0 has a series to read.
	for _, l := range limits {
		b.overLimit.WithLabelValues(l)
	}
	reg.MustRegister(b.overLimit)
	return b
}

// bound is the part of targets that cfg's bounds let the manager probe:
// at most targets.max_per_module of each module, and at most
// targets.max_probe_series probe series (a target times its module's
// specs) in all. Targets already probed (running says which, by name)
// keep their place before new ones, so that a burst of new names in a
// target file cannot push a long-probed target out and restart it later:
// what is over the bound is what came last. Among new targets, the
// order of discovery decides: by name, so that one set always leaves out
// the same targets.
//
// Each limit reached is logged once, when it starts leaving targets out,
// with the key to raise, and again when it no longer does; the number left
// out is always in rdmarun_exporter_targets_over_limit.
func (m *Manager) bound(cfg *config.Config, targets []config.Target, running func(name string) bool) []config.Target {
	perModule := map[string]int{}
	series := 0
	over := map[string][]string{} // limit -> names left out
	kept := make([]config.Target, 0, len(targets))
	admit := func(t config.Target) {
		n := len(cfg.Modules[t.Module].Tests)
		switch {
		case perModule[t.Module] >= cfg.Targets.MaxPerModule:
			over[limitPerModule] = append(over[limitPerModule], t.Name)
		case series+n > cfg.Targets.MaxProbeSeries:
			over[limitProbeSeries] = append(over[limitProbeSeries], t.Name)
		default:
			perModule[t.Module]++
			series += n
			kept = append(kept, t)
		}
	}
	for _, t := range targets {
		if running(t.Name) {
			admit(t)
		}
	}
	for _, t := range targets {
		if !running(t.Name) {
			admit(t)
		}
	}
	for _, l := range limits {
		was, now := m.bounds.last[l], len(over[l])
		m.bounds.last[l] = now
		m.bounds.overLimit.WithLabelValues(l).Set(float64(now))
		switch {
		case was == 0 && now > 0:
			m.logger.Warn("targets not probed: the config's bound is reached; raise it to probe them",
				"limit", l, "not_probed", now, "first", over[l][0],
				slog.Group("bounds", "max_per_module", cfg.Targets.MaxPerModule, "max_probe_series", cfg.Targets.MaxProbeSeries))
		case was > 0 && now == 0:
			m.logger.Info("every target within the config's bound is probed again", "limit", l)
		}
	}
	return kept
}
