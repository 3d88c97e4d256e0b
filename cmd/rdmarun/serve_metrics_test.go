package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/peer"
)

// TestServeMetrics: the listener serves the runtime's and the process's
// metrics (what the soak samples for growth) and the test counts; a
// readiness check (connect and close, as a wait loop does) counts apart,
// not as a failed test.
func TestServeMetrics(t *testing.T) {
	srv, err := peer.NewServer(peer.ServerConfig{Device: "rxe0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := startMetrics(ctx, "127.0.0.1:0", srv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	for deadline := time.Now().Add(5 * time.Second); srv.Checks() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %v", resp.Status, err)
	}
	for _, want := range []string{"\ngo_goroutines ", "\ngo_threads ", "\nprocess_open_fds ", "\nprocess_resident_memory_bytes ",
		"\nrdmarun_serve_tests_total 0\n", "\nrdmarun_serve_tests_failed_total 0\n", "\nrdmarun_serve_checks_total 1\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %q", strings.TrimSpace(want))
		}
	}
}

// TestServeMetricsAddressTaken: a port in use fails the start, naming the
// flag, rather than leaving a responder nobody can scrape.
func TestServeMetricsAddressTaken(t *testing.T) {
	srv, err := peer.NewServer(peer.ServerConfig{Device: "rxe0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := startMetrics(ctx, "127.0.0.1:0", srv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := &serveCmd{metricsListen: addr.String()}
	err = c.serveMetrics(ctx, srv, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--metrics-listen") {
		t.Fatalf("second listener on %s: got %v, want an error naming --metrics-listen", addr, err)
	}
}
