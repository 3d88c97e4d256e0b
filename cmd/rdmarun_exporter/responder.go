package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// tokenHowTo is the fix for a missing token, in one line: every node of a
// fleet must hold the same token, so it is made once and copied.
const tokenHowTo = "create the fleet's token once with `rdmarun token --owner rdmarun /etc/rdmarun/token`, copy that same file to every node, name it in responder.token_file, and restart"

// responderPlan is what the built-in responder does, decided once at
// start from the configuration and the token.
type responderPlan struct {
	serve bool
	// unauthenticated: it serves a network address with no token or client
	// certificates, because the operator allowed it.
	unauthenticated bool
	// off says why a responder the configuration enables does not serve.
	off string
}

// planResponder decides whether the responder serves. A token file that
// cannot be read, or a network address with nothing to authenticate
// clients, turns the responder off rather than the exporter: port
// metrics and probes still work.
func planResponder(cfg config.Responder, token string, tokenErr error) responderPlan {
	if !cfg.Enabled {
		return responderPlan{}
	}
	if tokenErr != nil {
		return responderPlan{off: fmt.Sprintf("%v; %s", tokenErr, tokenHowTo)}
	}
	err := ctrl.CheckAuthenticated(cfg.Listen, token, cfg.TLS.Ctrl())
	switch {
	case err == nil:
		return responderPlan{serve: true}
	case cfg.AllowUnauthenticated:
		return responderPlan{serve: true, unauthenticated: true}
	default:
		return responderPlan{off: fmt.Sprintf("%v; %s (or set responder.allow_unauthenticated: true to serve anyway)", err, tokenHowTo)}
	}
}

// register exposes the plan: alerts can find a fleet's responders that
// are off or open.
func (p responderPlan) register(reg prometheus.Registerer) {
	gauge := func(name, help string, on bool) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		if on {
			g.Set(1)
		}
		reg.MustRegister(g)
	}
	gauge("rdmarun_exporter_responder_enabled", "1 when the built-in responder answers other nodes' probes.", p.serve)
	gauge("rdmarun_exporter_responder_unauthenticated", "1 when the responder serves a network address without a token or client certificates (responder.allow_unauthenticated).", p.unauthenticated)
}

// serveResponder answers other nodes' probes on device until ctx ends.
func serveResponder(ctx context.Context, cfg config.Responder, device, token string, logger *slog.Logger) error {
	var tlsCfg *tls.Config
	if cfg.TLS.CertFile != "" {
		var err error
		if tlsCfg, err = cfg.TLS.Ctrl().ServerConfig(); err != nil {
			return err
		}
	}
	lim := cfg.Limits()
	scfg := peer.ServerConfig{Device: device, GIDIndex: rdma.AutoGIDIndex, Token: token, Logger: logger,
		MaxConcurrent: lim.MaxConcurrent, MaxMemory: lim.MaxMemory, MaxQPs: lim.MaxQPs, MaxTest: lim.MaxTest, LimitKeys: peer.LimitKeys(lim.Keys)}
	srv, err := peer.NewServer(scfg)
	if err != nil {
		return err
	}
	// The CM listener starts first: a prober that reaches the control
	// port may connect its QPs through the CM at once.
	if cfg.CMPort >= 0 {
		addr, err := srv.ListenCM(netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(cfg.CMPort)))
		if err != nil {
			logger.Warn("responder not listening for rdma_cm connections; probes with connect: rdma_cm will be refused", "cm_port", cfg.CMPort, "err", err)
		} else {
			logger.Info("responder listening for rdma_cm connections", "cm_listen", addr.String())
		}
	}
	ln, err := ctrl.Listen(cfg.Listen, tlsCfg)
	if err != nil {
		srv.CloseCM()
		return err
	}
	go func() {
		if err := srv.Serve(ctx, ln); err != nil {
			logger.Error("responder stopped", "err", err)
		}
	}()
	logger.Info("responder listening", "address", ln.Addr().String(), "device", device)
	return nil
}
