package collector

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/rdmarun/rdmarun/internal/golden"
)

// TestPortCollectorExposition pins the whole text exposition for each
// fixture tree. "sysfs" has an rxe device (hw_counters only) and an mlx5
// device with both counter directories and a second, DOWN port; "broken"
// has malformed files, a device without ports/ and a non-numeric port.
func TestPortCollectorExposition(t *testing.T) {
	for _, tree := range []string{"sysfs", "broken"} {
		t.Run(tree, func(t *testing.T) {
			c := NewPortCollector(filepath.Join("testdata", tree), nil)
			golden.Check(t, tree+".prom", exposition(t, c))
		})
	}
}

func TestPortCollectorErrorCount(t *testing.T) {
	for tree, want := range map[string]float64{
		"sysfs": 0,
		// bad0: state, rate, counters/port_xmit_data, hw_counters/rdma_sends;
		// noports: ports/. A malformed lifespan is not counted.
		"broken": 5,
	} {
		c := NewPortCollector(filepath.Join("testdata", tree), nil)
		if got := gather(t, c)["rdmarun_port_collector_errors"]; len(got) != 1 || got[0].value != want {
			t.Errorf("%s: rdmarun_port_collector_errors = %v, want one sample of %v", tree, got, want)
		}
	}
}

func TestPortCollectorLint(t *testing.T) {
	for _, tree := range []string{"sysfs", "broken"} {
		c := NewPortCollector(filepath.Join("testdata", tree), nil)
		// Linting an empty gather would pass vacuously.
		if n := testutil.CollectAndCount(c); n < 2 {
			t.Fatalf("%s: collected %d metrics", tree, n)
		}
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s: %s", tree, p.Metric, p.Text)
		}
	}
}

func TestPortCollectorMissingRoot(t *testing.T) {
	c := NewPortCollector(filepath.Join(t.TempDir(), "infiniband"), nil)
	got := gather(t, c)
	if len(got) != 1 {
		t.Errorf("got families %v, want only rdmarun_port_collector_errors", keys(got))
	}
	if e := got["rdmarun_port_collector_errors"]; len(e) != 1 || e[0].value != 0 {
		t.Errorf("rdmarun_port_collector_errors = %v, want 0: a host without RDMA is not broken", e)
	}
}

// TestPortCollectorBoundedLabels keeps per-connection identifiers (GUIDs,
// GIDs, QPNs, LIDs) out of labels, where each new value would be a new
// series; only the info metric names the node GUID, once per port.
//
// The category labels take a fixed set of values each, listed here.
func TestPortCollectorBoundedLabels(t *testing.T) {
	allowed := map[string]bool{"device": true, "port": true, "name": true, "category": true, "direction": true, "priority": true}
	info := map[string]bool{"device": true, "port": true, "link_layer": true, "driver": true, "node_guid": true}
	idLike := regexp.MustCompile(`^(0x)?[0-9a-f]{4}(:[0-9a-f]{4}){3}$|^0x[0-9a-f]+$|:.*:`)
	values := map[string]*regexp.Regexp{
		"category":  regexp.MustCompile(`^(retransmits|seq_errors|cnp_sent|cnp_handled|ecn_marked)$`),
		"direction": regexp.MustCompile(`^(rx|tx)$`),
		"priority":  regexp.MustCompile(`^([0-7]|link)$`),
	}
	for _, c := range []*PortCollector{NewPortCollector(filepath.Join("testdata", "sysfs"), nil), roceCollector(t, nil)} {
		for family, samples := range gather(t, c) {
			want := allowed
			if family == "rdmarun_port_info" {
				want = info
			}
			for _, s := range samples {
				for k, v := range s.labels {
					if !want[k] {
						t.Errorf("%s has label %s=%q", family, k, v)
					}
					if k != "node_guid" && idLike.MatchString(v) {
						t.Errorf("%s label %s=%q looks like an identifier", family, k, v)
					}
					if re, ok := values[k]; ok && !re.MatchString(v) {
						t.Errorf("%s label %s=%q is not one of %s", family, k, v, re)
					}
				}
			}
		}
	}
}

func TestPortCollectorValues(t *testing.T) {
	got := gather(t, NewPortCollector(filepath.Join("testdata", "sysfs"), nil))
	for _, tc := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"rdmarun_port_up", map[string]string{"device": "mlx5_0", "port": "1"}, 1},
		{"rdmarun_port_up", map[string]string{"device": "mlx5_0", "port": "2"}, 0},
		{"rdmarun_port_state", map[string]string{"device": "mlx5_0", "port": "2"}, 1},
		{"rdmarun_port_physical_state", map[string]string{"device": "mlx5_0", "port": "2"}, 3},
		{"rdmarun_port_rate_bytes_per_second", map[string]string{"device": "mlx5_0", "port": "1"}, 25e9},
		{"rdmarun_port_rate_bytes_per_second", map[string]string{"device": "rxe0", "port": "1"}, 1.25e9},
		{"rdmarun_port_transmit_bytes_total", map[string]string{"device": "mlx5_0", "port": "1"}, 4e6},
		{"rdmarun_port_receive_bytes_total", map[string]string{"device": "mlx5_0", "port": "1"}, 3996000},
		{"rdmarun_port_hw_counters_total", map[string]string{"device": "rxe0", "port": "1", "name": "rcvd_pkts"}, 120034},
		{"rdmarun_port_info", map[string]string{"device": "rxe0", "port": "1", "driver": "rdma_rxe", "link_layer": "Ethernet", "node_guid": "ac1e:b2ff:fe33:4455"}, 1},
		{"rdmarun_port_info", map[string]string{"device": "mlx5_0", "port": "2", "driver": "mlx5_core", "link_layer": "InfiniBand", "node_guid": "b859:9f03:00d4:1e2a"}, 1},
	} {
		if v, ok := find(got[tc.family], tc.labels); !ok || v != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.family, tc.labels, v, ok, tc.want)
		}
	}
	if _, ok := find(got["rdmarun_port_hw_counters_total"], map[string]string{"device": "rxe0", "port": "1", "name": "lifespan"}); ok {
		t.Error("hw_counters/lifespan is exported as a counter")
	}
	if n := len(got["rdmarun_port_transmit_bytes_total"]); n != 2 {
		t.Errorf("%d rdmarun_port_transmit_bytes_total series, want 2 (rxe has no counters/)", n)
	}
}

// exposition renders c in the text format. It does not use
// testutil.CollectAndFormat, which in client_golang v1.25.0 drops every
// family when no metric names are given.
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	mfs := families(t, c)
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

type sample struct {
	labels map[string]string
	value  float64
}

// families collects c once through a pedantic registry, which also
// checks that the metrics match their descriptions and that no series is
// duplicated.
func families(t *testing.T, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// gather collects c once, by family name.
func gather(t *testing.T, c prometheus.Collector) map[string][]sample {
	t.Helper()
	out := map[string][]sample{}
	for _, mf := range families(t, c) {
		for _, m := range mf.GetMetric() {
			s := sample{labels: map[string]string{}}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.Gauge != nil:
				s.value = m.GetGauge().GetValue()
			case m.Counter != nil:
				s.value = m.GetCounter().GetValue()
			}
			out[mf.GetName()] = append(out[mf.GetName()], s)
		}
	}
	return out
}

func find(samples []sample, labels map[string]string) (float64, bool) {
next:
	for _, s := range samples {
		if len(s.labels) != len(labels) {
			continue
		}
		for k, v := range labels {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

func keys(m map[string][]sample) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
