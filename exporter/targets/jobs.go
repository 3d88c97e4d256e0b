package targets

import (
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/rdma"
)

// jobs lists a target's jobs, one per spec of its module, probing from
// the target's device, else from device, on the target's device port,
// labelled with this node's name, source.
func jobs(cfg *config.Config, t config.Target, device, source string) []prober.Job {
	if t.Device != "" {
		device = t.Device
	}
	m := cfg.Modules[t.Module]
	p := prober.Peer{Addr: t.Address, Device: device, Port: t.DevicePort, TLS: m.TLS.Ctrl()}
	var out []prober.Job
	for _, spec := range m.Tests {
		interval := m.Interval
		if spec.Measure == rdma.MeasureBandwidth && m.Bandwidth != nil {
			interval = m.Bandwidth.Interval
		}
		k := prober.KeyOf(source, p.Device, p.Port, t.Name, spec)
		out = append(out, prober.Job{Key: k, Peer: p, Spec: spec, Interval: interval, Timeout: m.Timeout})
	}
	return out
}
