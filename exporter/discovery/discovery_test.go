package discovery

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// run is a Discoverer running in the background, with every set it
// handed over.
type run struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	sets    [][]config.Target
	changed chan struct{} // a new set arrived
}

func startRun(t *testing.T, d *Discoverer) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	go func() {
		defer close(r.done)
		d.Run(ctx, func(ts []config.Target) {
			r.mu.Lock()
			r.sets = append(r.sets, ts)
			r.mu.Unlock()
			select {
			case r.changed <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels the run and checks that Run returns.
func (r *run) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of its context ending")
	}
}

func (r *run) last() ([]config.Target, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sets) == 0 {
		return nil, 0
	}
	return r.sets[len(r.sets)-1], len(r.sets)
}

// want waits until the latest set is want; within 0 means the first set,
// which Run hands over at once.
func (r *run) want(t *testing.T, what string, within time.Duration, want ...config.Target) {
	t.Helper()
	deadline := time.After(max(within, 5*time.Second))
	for {
		got, n := r.last()
		if n > 0 && slices.Equal(got, want) {
			return
		}
		if n > 0 && within == 0 {
			t.Fatalf("%s: got\n%v\nwant\n%v", what, got, want)
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("%s: after %v got\n%v\nwant\n%v", what, max(within, 5*time.Second), got, want)
		}
	}
}

// sets says how many sets were handed over so far.
func (r *run) count() int {
	_, n := r.last()
	return n
}

func tgt(name, addr, module string) config.Target {
	return config.Target{Name: name, Address: addr, Module: module}
}

func TestMerge(t *testing.T) {
	a := tgt("a", "10.0.0.1:1", "m")
	b := tgt("b", "10.0.0.2:1", "m")
	c := tgt("c", "10.0.0.3:1", "m")
	aElsewhere := tgt("a", "10.9.9.9:1", "m")
	for _, tc := range []struct {
		name   string
		static []config.Target
		files  []config.Target
		dns    [][]config.Target
		want   []config.Target
		counts map[string]float64 // targets by source
		errs   map[string]float64
	}{
		{name: "nothing", want: nil},
		{
			name: "sorted by name", static: []config.Target{c}, files: []config.Target{b}, dns: [][]config.Target{{a}},
			want:   []config.Target{a, b, c},
			counts: map[string]float64{SourceStatic: 1, SourceFile: 1, SourceDNS: 1},
		},
		{
			name: "the same target twice is one", static: []config.Target{a}, files: []config.Target{a, b}, dns: [][]config.Target{{b}, {b}},
			want:   []config.Target{a, b},
			counts: map[string]float64{SourceStatic: 1, SourceFile: 1},
		},
		{
			name: "static wins a name", static: []config.Target{a}, files: []config.Target{aElsewhere, b},
			want:   []config.Target{a, b},
			counts: map[string]float64{SourceStatic: 1, SourceFile: 1},
			errs:   map[string]float64{SourceFile: 1},
		},
		{
			name: "a file wins over DNS", files: []config.Target{aElsewhere}, dns: [][]config.Target{{a, c}},
			want:   []config.Target{aElsewhere, c},
			counts: map[string]float64{SourceFile: 1, SourceDNS: 1},
			errs:   map[string]float64{SourceDNS: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			d := New(&config.Config{}, WithMetrics(NewMetrics(reg)))
			m := merger{d: d, static: tc.static, files: tc.files, dns: tc.dns}
			for round := range 2 {
				if got := m.merge(); !slices.Equal(got, tc.want) {
					t.Errorf("round %d: merge = %v, want %v", round, got, tc.want)
				}
				// A clash that lasts is counted once, not per merge.
				for _, s := range sources {
					if got := testutil.ToFloat64(d.metrics.targets.WithLabelValues(s)); got != tc.counts[s] {
						t.Errorf("round %d: targets{source=%q} = %v, want %v", round, s, got, tc.counts[s])
					}
					if got := testutil.ToFloat64(d.metrics.errors.WithLabelValues(s)); got != tc.errs[s] {
						t.Errorf("round %d: errors{source=%q} = %v, want %v", round, s, got, tc.errs[s])
					}
				}
			}
		})
	}
}

// TestStaticOnly checks the simplest config: its targets, handed over
// once, sorted, and nothing else running.
func TestStaticOnly(t *testing.T) {
	cfg := &config.Config{Targets: config.Targets{Static: []config.Target{tgt("z", "10.0.0.9:1", "m"), tgt("a", "10.0.0.1:1", "m")}}}
	r := startRun(t, New(cfg))
	r.want(t, "static", 0, tgt("a", "10.0.0.1:1", "m"), tgt("z", "10.0.0.9:1", "m"))
	r.stop(t)
	if n := r.count(); n != 1 {
		t.Errorf("%d sets handed over, want 1", n)
	}
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Three sources, three metrics: all present before anything happened.
	if n != 9 {
		t.Errorf("%d series registered, want 9", n)
	}
	for _, name := range []string{"rdmarun_exporter_discovery_targets", "rdmarun_exporter_discovery_errors_total", "rdmarun_exporter_discovery_last_refresh_timestamp_seconds"} {
		if c, err := testutil.GatherAndCount(reg, name); err != nil || c != 3 {
			t.Errorf("%s: %d series (%v), want 3", name, c, err)
		}
	}
}

func errCount(d *Discoverer, source string) float64 {
	return testutil.ToFloat64(d.metrics.errors.WithLabelValues(source))
}

// TestPrevious reloads while every source fails: the new Discoverer starts
// from the old one's last good targets, under the new modules.
func TestPrevious(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.yml")
	write(t, path, testdata(t, "rack2.yml"))
	res := newFakeResolver()
	res.hosts["peers"] = []string{"10.0.0.1"}
	res.srvs["_x._tcp"] = []*net.SRV{srv("n1", 7)}
	res.hosts["n1"] = []string{"10.0.1.1"}
	cfg := &config.Config{Modules: modules, Targets: config.Targets{
		Files: []string{path},
		DNS: []config.DNSTarget{
			{Name: "peers", Port: 7, Module: "m", Refresh: time.Minute},
			{Name: "_x._tcp", Module: "m", Refresh: time.Minute},
		},
	}}
	d1 := New(cfg, WithResolver(res))
	r := startRun(t, d1)
	r.want(t, "before the reload", 0, config.Target{Name: "_x._tcp/n1:7", Address: "10.0.1.1:7", Module: "m"}, tgt("peers/10.0.0.1", "10.0.0.1:7", "m"), rack2[0])
	r.stop(t)

	write(t, path, testdata(t, "invalid-yaml.yml"))
	res.set(func(f *fakeResolver) {
		f.fail["peers"] = errors.New("SERVFAIL")
		f.fail["_x._tcp"] = errors.New("SERVFAIL")
	})
	for _, tc := range []struct {
		name string
		cfg  func(c *config.Config)
		want []config.Target
	}{
		{
			name: "same config",
			cfg:  func(c *config.Config) {},
			want: []config.Target{{Name: "_x._tcp/n1:7", Address: "10.0.1.1:7", Module: "m"}, tgt("peers/10.0.0.1", "10.0.0.1:7", "m"), rack2[0]},
		},
		{
			name: "module changed",
			cfg: func(c *config.Config) {
				c.Targets.DNS[0].Module, c.Targets.DNS[0].Device, c.Targets.DNS[0].DevicePort = "other", "rxe1", 2
			},
			want: []config.Target{{Name: "_x._tcp/n1:7", Address: "10.0.1.1:7", Module: "m"}, {Name: "peers/10.0.0.1", Address: "10.0.0.1:7", Module: "other", Device: "rxe1", DevicePort: 2}, rack2[0]},
		},
		{
			name: "port changed, file's module gone",
			cfg: func(c *config.Config) {
				c.Modules = map[string]config.Module{"other": {}}
				c.Targets.DNS[0].Port = 8
				c.Targets.DNS[1].Module = "other"
			},
			want: []config.Target{{Name: "_x._tcp/n1:7", Address: "10.0.1.1:7", Module: "other"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *cfg
			c.Targets.DNS = slices.Clone(cfg.Targets.DNS)
			tc.cfg(&c)
			d2 := New(&c, WithResolver(res), WithPrevious(d1))
			r := startRun(t, d2)
			r.want(t, "after the reload", 0, tc.want...)
			r.stop(t)
		})
	}
}
