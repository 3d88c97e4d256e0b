package config

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SafeConfig holds the running configuration. Readers take the read lock;
// ReloadConfig swaps C only when the new file is valid, so a bad edit never
// stops probing.
type SafeConfig struct {
	sync.RWMutex
	C *Config

	reloadSuccess   prometheus.Gauge
	reloadTimestamp prometheus.Gauge
}

// NewSafeConfig returns an empty SafeConfig whose reload gauges are
// registered on reg (none when reg is nil). Like any collector, registering
// twice on one registry panics.
func NewSafeConfig(reg prometheus.Registerer) *SafeConfig {
	sc := &SafeConfig{
		reloadSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_config_last_reload_successful",
			Help: "Whether the last configuration reload succeeded (1) or failed (0).",
		}),
		reloadTimestamp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_config_last_reload_success_timestamp_seconds",
			Help: "Time of the last successful configuration reload, in seconds since the epoch.",
		}),
	}
	if reg != nil {
		reg.MustRegister(sc.reloadSuccess, sc.reloadTimestamp)
	}
	return sc
}

// ReloadConfig loads path and, if it is valid, makes it the configuration.
// On error the old configuration stays and the error is returned for the
// caller to report (HTTP reload answers with it, SIGHUP logs it).
func (sc *SafeConfig) ReloadConfig(path string, logger *slog.Logger) error {
	c, err := Load(path)
	if err != nil {
		sc.reloadSuccess.Set(0)
		return err
	}
	sc.Lock()
	sc.C = c
	sc.Unlock()
	sc.reloadSuccess.Set(1)
	sc.reloadTimestamp.Set(float64(time.Now().UnixNano()) / 1e9)
	if logger != nil {
		logger.Info("loaded config file", "path", path, "modules", len(c.Modules), "static_targets", len(c.Targets.Static))
	}
	return nil
}
