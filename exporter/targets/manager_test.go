package targets

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/rdma"
)

const modules = `
modules:
  default: {interval: 1s, timeout: 500ms}
  with_bandwidth:
    interval: 1s
    timeout: 500ms
    bandwidth: {size: 64KiB, duration: 10ms, interval: 2s}
`

func parse(t *testing.T, targets string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(modules + "targets:\n  static:\n" + targets))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakePeers answers every probe at once and records where each went.
type fakePeers struct {
	mu    sync.Mutex
	peers map[string]prober.Peer // by address
}

func (f *fakePeers) transport(_ context.Context, p prober.Peer, _ rdma.Test) (*rdma.Result, error) {
	f.mu.Lock()
	f.peers[p.Addr] = p
	f.mu.Unlock()
	return &rdma.Result{Latency: &rdma.LatencyStats{Buckets: []rdma.Bucket{{Ns: 2000, Count: 1}}}}, nil
}

func (f *fakePeers) peer(addr string) (prober.Peer, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.peers[addr]
	return p, ok
}

// successLabels lists the label sets of rdma_probe_success on reg.
func successLabels(t *testing.T, reg *prometheus.Registry) []map[string]string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		if mf.GetName() != "rdma_probe_success" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out = append(out, l)
		}
	}
	return out
}

// successSeries lists the label sets of rdma_probe_success on reg as
// "target device port size", sorted.
func successSeries(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	var out []string
	for _, l := range successLabels(t, reg) {
		out = append(out, fmt.Sprintf("%s %s %s %s", l["target"], l["device"], l["port"], l["size_bytes"]))
	}
	slices.Sort(out)
	return out
}

func newManager(t *testing.T) (*Manager, *prometheus.Registry, *fakePeers) {
	t.Helper()
	reg := prometheus.NewRegistry()
	f := &fakePeers{peers: map[string]prober.Peer{}}
	m := NewManager(reg, prober.RunFunc(f.transport), "rxe0", Identity{Source: "node-a"}, slog.New(slog.DiscardHandler))
	t.Cleanup(m.Stop)
	return m, reg, f
}

// TestManagerFollowsTargets: Apply starts a config's targets with their
// series in place when it returns, labelled with the device and device
// port the probes go from; a new config keeps the unchanged targets
// running, restarts the changed ones and deletes the series of the gone.
func TestManagerFollowsTargets(t *testing.T) {
	m, reg, f := newManager(t)
	ctx := context.Background()
	m.Apply(ctx, parse(t, `
    - {name: a, address: 10.0.0.1:18520, module: default, device: mlx5_0, device_port: 2}
    - {name: b, address: 10.0.0.2:18520, module: with_bandwidth}
`))
	want := []string{"a mlx5_0 2 2", "b rxe0 1 2", "b rxe0 1 65536"}
	if got := successSeries(t, reg); !slices.Equal(got, want) {
		t.Fatalf("after the first Apply: %q, want %q", got, want)
	}
	// The first probe comes within an interval (1 s); its peer must be
	// the port its series says.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, ok := f.peer("10.0.0.1:18520")
		if ok {
			if p.Device != "mlx5_0" || p.Port != 2 {
				t.Errorf("a probed from %s port %d, want mlx5_0 port 2", p.Device, p.Port)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a not probed within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.mu.Lock()
	runA := m.runs["a"]
	m.mu.Unlock()

	m.Apply(ctx, parse(t, `
    - {name: a, address: 10.0.0.1:18520, module: default, device: mlx5_0, device_port: 2}
    - {name: c, address: 10.0.0.3:18520, module: default, device_port: 3}
`))
	want = []string{"a mlx5_0 2 2", "c rxe0 3 2"}
	if got := successSeries(t, reg); !slices.Equal(got, want) {
		t.Errorf("after b went and c came: %q, want %q", got, want)
	}
	m.mu.Lock()
	if m.runs["a"] != runA {
		t.Error("a, unchanged, was restarted")
	}
	m.mu.Unlock()

	m.Apply(ctx, parse(t, `
    - {name: a, address: 10.0.0.1:18520, module: default, device: mlx5_0, device_port: 1}
`))
	want = []string{"a mlx5_0 1 2"}
	if got := successSeries(t, reg); !slices.Equal(got, want) {
		t.Errorf("after a's device port changed: %q, want %q", got, want)
	}
	m.mu.Lock()
	if m.runs["a"] == runA {
		t.Error("a, its device port changed, kept running as it was")
	}
	m.mu.Unlock()
}

// TestManagerStop: Stop ends every run, and an Apply after it (a reload
// racing the shutdown) starts nothing.
func TestManagerStop(t *testing.T) {
	m, _, _ := newManager(t)
	cfg := parse(t, "    - {name: a, address: 10.0.0.1:18520, module: default}\n")
	m.Apply(context.Background(), cfg)
	m.mu.Lock()
	r := m.runs["a"]
	m.mu.Unlock()
	if r == nil {
		t.Fatal("a not running after Apply")
	}
	m.Stop()
	select {
	case <-r.done:
	default:
		t.Error("a's run not done after Stop")
	}
	m.Apply(context.Background(), cfg)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.runs) != 0 || m.discCancel != nil {
		t.Errorf("Apply after Stop started %d runs, discovery %v", len(m.runs), m.discCancel != nil)
	}
}

func TestJobs(t *testing.T) {
	cfg := parse(t, "    - {name: a, address: 10.0.0.1:18520, module: with_bandwidth, device_port: 2}\n")
	tgt := cfg.Targets.Static[0]
	js := jobs(cfg, tgt, "rxe0", "node-a")
	if len(js) != 2 {
		t.Fatalf("%d jobs, want a latency and a bandwidth one", len(js))
	}
	var got []string
	for _, j := range js {
		got = append(got, fmt.Sprintf("%s %d B every %v within %v: key %s %s/%d %s, peer %s %s/%d",
			j.Spec.Measure, j.Spec.Size, j.Interval, j.Timeout, j.Key.Source, j.Key.Device, j.Key.Port, j.Key.Target, j.Peer.Addr, j.Peer.Device, j.Peer.Port))
	}
	want := []string{
		"latency 2 B every 1s within 500ms: key node-a rxe0/2 a, peer 10.0.0.1:18520 rxe0/2",
		"bandwidth 65536 B every 2s within 500ms: key node-a rxe0/2 a, peer 10.0.0.1:18520 rxe0/2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("jobs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
