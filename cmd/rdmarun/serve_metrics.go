package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rdmarun/rdmarun/peer"
)

// The responder's own metrics (--metrics-listen): the Go runtime's and
// the process's (goroutines, threads, fds, RSS) and how many tests it
// served, so an operator, or the soak test, can watch a long-lived
// responder for growth without attaching a debugger. Off unless asked
// for: the responder's job is its control channel, and an HTTP port is
// one more thing to firewall.

var (
	serveTestsDesc = prometheus.NewDesc("rdmarun_serve_tests_total",
		"Connections the responder gave a test slot and finished with: tests, kept sessions (once for all their runs) and clients that failed before their test.", nil, nil)
	serveTestsFailedDesc = prometheus.NewDesc("rdmarun_serve_tests_failed_total",
		"Those of rdmarun_serve_tests_total that ended in an error (a failed test, a client that broke off or failed the handshake).", nil, nil)
	serveChecksDesc = prometheus.NewDesc("rdmarun_serve_checks_total",
		"Connections that closed before the client said anything: TCP readiness checks (a wait loop, a tcpSocket probe), not in rdmarun_serve_tests_total.", nil, nil)
)

// serveStatsCollector reads the responder's counts at scrape time.
type serveStatsCollector struct{ srv *peer.Server }

func (c serveStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- serveTestsDesc
	ch <- serveTestsFailedDesc
	ch <- serveChecksDesc
}

func (c serveStatsCollector) Collect(ch chan<- prometheus.Metric) {
	served, failed := c.srv.Stats()
	ch <- prometheus.MustNewConstMetric(serveTestsDesc, prometheus.CounterValue, float64(served))
	ch <- prometheus.MustNewConstMetric(serveTestsFailedDesc, prometheus.CounterValue, float64(failed))
	ch <- prometheus.MustNewConstMetric(serveChecksDesc, prometheus.CounterValue, float64(c.srv.Checks()))
}

// serveMetrics serves /metrics on c.metricsListen until ctx ends; with no
// address it does nothing.
func (c *serveCmd) serveMetrics(ctx context.Context, srv *peer.Server, log *slog.Logger) error {
	if c.metricsListen == "" {
		return nil
	}
	addr, err := startMetrics(ctx, c.metricsListen, srv, log)
	if err != nil {
		return &exitError{exitEnvironment, fmt.Errorf("--metrics-listen: %w", err)}
	}
	log.Info("serving metrics", "listen", addr.String(), "path", "/metrics")
	return nil
}

// startMetrics listens on addr before it returns, so a taken port fails
// the start rather than a later scrape.
func startMetrics(ctx context.Context, addr string, srv *peer.Server, log *slog.Logger) (net.Addr, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		serveStatsCollector{srv})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// Bounds so that a slow or stuck scraper holds a goroutine and an fd
	// for seconds, not for ever.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
