package targets

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/prober"
)

// lockedBuffer is a log written from the manager's goroutines and read
// by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was logged since the last take.
func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestManagerBounds: a target file that lists more than the config's
// bounds allow is probed up to them, the rest counted in
// rdmarun_exporter_targets_over_limit by the key to raise; targets already
// probed keep their place before new ones; each limit is logged when it
// starts and when it stops leaving targets out, not at every change.
func TestManagerBounds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "targets.yml")
	var log lockedBuffer
	reg := prometheus.NewRegistry()
	f := &fakePeers{peers: map[string]prober.Peer{}}
	m := NewManager(reg, prober.RunFunc(f.transport), "rxe0", Identity{Source: "node-a"}, slog.New(slog.NewTextHandler(&log, nil)))
	t.Cleanup(m.Stop)

	for _, step := range []struct {
		name     string
		bounds   string
		targets  []string // name:module, in the file's order
		probed   []string // targets with series, sorted
		over     [2]int   // per module, probe series
		logs     []string // substrings of this step's log, in order
		noLogsOf string   // a substring this step must not log
	}{
		{
			name: "over max_per_module", bounds: "max_per_module: 2",
			targets: []string{"a:default", "b:default", "c:default"},
			probed:  []string{"a", "b"}, over: [2]int{1, 0},
			logs: []string{`level=WARN msg="targets not probed: the config's bound is reached; raise it to probe them" limit=targets.max_per_module not_probed=1 first=c bounds.max_per_module=2 bounds.max_probe_series=5000`},
		},
		{
			// d comes first, by name as discovery orders the set, but a
			// and b are probed already.
			name: "running targets keep their place", bounds: "max_per_module: 2",
			targets: []string{"d:default", "a:default", "b:default", "c:default"},
			probed:  []string{"a", "b"}, over: [2]int{2, 0},
			noLogsOf: "targets not probed",
		},
		{
			name: "back within the bound", bounds: "max_per_module: 2",
			targets: []string{"a:default", "c:default"},
			probed:  []string{"a", "c"}, over: [2]int{0, 0},
			logs: []string{`level=INFO msg="every target within the config's bound is probed again" limit=targets.max_per_module`},
		},
		{
			// w1 and w2 make two series each; d, after them, still fits.
			name: "over max_probe_series", bounds: "max_probe_series: 3",
			targets: []string{"w1:with_bandwidth", "w2:with_bandwidth", "d:default"},
			probed:  []string{"d", "w1"}, over: [2]int{0, 1},
			logs: []string{`limit=targets.max_probe_series not_probed=1 first=w2`},
		},
		{
			name: "both", bounds: "max_per_module: 1\n  max_probe_series: 3",
			targets: []string{"w1:with_bandwidth", "w2:with_bandwidth", "d:default", "e:default"},
			probed:  []string{"d", "w1"}, over: [2]int{2, 0},
			// e and w2 are both over the per-module bound, and new
			// targets are taken by name.
			logs: []string{`limit=targets.max_per_module not_probed=2 first=e`,
				`level=INFO msg="every target within the config's bound is probed again" limit=targets.max_probe_series`},
		},
	} {
		var list strings.Builder
		for i, tm := range step.targets {
			name, module, _ := strings.Cut(tm, ":")
			fmt.Fprintf(&list, "- {name: %s, address: 10.0.0.%d:18520, module: %s}\n", name, i+1, module)
		}
		if err := os.WriteFile(file, []byte(list.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse([]byte(modules + "targets:\n  files: [" + file + "]\n  " + step.bounds + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		// A reload: discovery reads the file afresh.
		m.Apply(context.Background(), cfg)

		var probed []string
		for _, l := range successLabels(t, reg) {
			if !slices.Contains(probed, l["target"]) {
				probed = append(probed, l["target"])
			}
		}
		slices.Sort(probed)
		if !slices.Equal(probed, step.probed) {
			t.Errorf("%s: probed %q, want %q", step.name, probed, step.probed)
		}
		for i, l := range limits {
			if got := testutil.ToFloat64(m.bounds.overLimit.WithLabelValues(l)); got != float64(step.over[i]) {
				t.Errorf("%s: rdmarun_exporter_targets_over_limit{limit=%q} = %v, want %d", step.name, l, got, step.over[i])
			}
		}
		logged := log.take()
		rest := logged
		for _, want := range step.logs {
			i := strings.Index(rest, want)
			if i < 0 {
				t.Errorf("%s: log lacks %q (in order):\n%s", step.name, want, logged)
				break
			}
			rest = rest[i+len(want):]
		}
		if step.noLogsOf != "" && strings.Contains(logged, step.noLogsOf) {
			t.Errorf("%s: logged %q again:\n%s", step.name, step.noLogsOf, logged)
		}
	}
}
