package prober

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// Handler serves /probe: one probe on demand, blackbox style. Its metrics
// go into a registry of their own and back in the response. With
// debug=true the response is instead the probe's log, step by step, then
// the metrics and the module, as text for a person.
type Handler struct {
	cfg    *config.SafeConfig
	device string
	// source gives the node's name for the source label at each request:
	// the scheduled probes' own, which a reload may change.
	source func() string
	logger *slog.Logger
	// transport gives a request's transport, its steps logged to log;
	// tests replace it.
	transport func(log *slog.Logger) Transport
}

// NewHandler probes with the modules of cfg as they are at each request,
// from the default port of device, presenting token to the responders;
// its series carry source's answer as their source label.
func NewHandler(cfg *config.SafeConfig, device, token string, source func() string, logger *slog.Logger) *Handler {
	return &Handler{cfg: cfg, device: device, source: source, logger: logger,
		transport: func(log *slog.Logger) Transport { return PeerTransport{Token: token, Logger: log} }}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target, module := r.URL.Query().Get("target"), r.URL.Query().Get("module")
	debug := r.URL.Query().Get("debug") == "true"
	if target == "" || module == "" {
		http.Error(w, "want target=HOST:PORT and module=NAME", http.StatusBadRequest)
		return
	}
	h.cfg.RLock()
	m, ok := h.cfg.C.Modules[module]
	h.cfg.RUnlock()
	if !ok {
		http.Error(w, fmt.Sprintf("unknown module %q", module), http.StatusBadRequest)
		return
	}
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	var logBuf bytes.Buffer
	log := h.logger
	if debug {
		log = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	tr := h.transport(log)
	// A request names no device port, so its probes go from the default
	// one, as a target's do when it names none.
	p := Peer{Addr: target, Device: h.device, Port: config.DefaultDevicePort, TLS: m.TLS.Ctrl()}
	source := h.source()
	for _, spec := range m.Tests {
		if spec.Measure == rdma.MeasureBandwidth {
			continue // bandwidth probes are long; they run on their own schedule only
		}
		k := KeyOf(source, p.Device, p.Port, target, spec)
		metrics.Init(k, false)
		log.Debug("probe", "target", target, "module", module, "spec", spec.String(), "timeout", m.Timeout)
		start := time.Now()
		if err := ProbeRDMA(r.Context(), tr, metrics, k, p, spec, m.Timeout); err != nil {
			log.Debug("probe failed", "target", target, "module", module, "took", time.Since(start), "err", err)
		} else {
			log.Debug("probe succeeded", "target", target, "module", module, "took", time.Since(start))
		}
	}
	if !debug {
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Logs for the probe:\n%s\n\nMetrics that would have been returned:\n", logBuf.String())
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Fprintf(w, "gathering them failed: %v\n", err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return
		}
	}
	fmt.Fprintf(w, "\n\nModule %q:\n%s", module, describeModule(m))
}

// describeModule writes a module out for a person reading a debug probe,
// with units, the way the config file spells it.
func describeModule(m config.Module) string {
	var b strings.Builder
	sizes := make([]string, len(m.Sizes))
	for i, s := range m.Sizes {
		sizes[i] = units.FormatBytes(uint64(s))
	}
	fmt.Fprintf(&b, "  op: %s\n  mode: %s\n  sizes: [%s]\n  count: %d\n  warmup: %d\n  interval: %v\n  timeout: %v\n",
		m.Op, m.Mode, strings.Join(sizes, ", "), m.Count, m.Warmup, m.Interval, m.Timeout)
	// The attributes the probes use, defaults filled in: one round's tests
	// all share them.
	q := m.Tests[0].QP
	fmt.Fprintf(&b, "  qp: {type: %s, timeout: %d, retry_cnt: %d, rnr_retry: %d, mtu: %d}  # mtu 0: the port's active MTU\n",
		m.QP.Type, q.Timeout, q.RetryCnt, q.RNRRetry, q.MTU)
	if bw := m.Bandwidth; bw != nil {
		fmt.Fprintf(&b, "  bandwidth: {size: %s, duration: %v, interval: %v, tx_depth: %d}\n",
			units.FormatBytes(uint64(bw.Size)), bw.Duration, bw.Interval, bw.TxDepth)
	}
	if t := m.TLS; t.Enabled() {
		fmt.Fprintf(&b, "  tls: {ca_file: %q, cert_file: %q, server_name: %q, insecure_skip_verify: %t}\n",
			t.CAFile, t.CertFile, t.ServerName, t.InsecureSkipVerify)
	}
	return b.String()
}
