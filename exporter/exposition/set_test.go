package exposition

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// testKey is a key of the test families: the exporter's shape, with
// fewer labels.
type testKey struct {
	Source, Target, Op string
	Port               int
}

func (k testKey) values() []string {
	return []string{k.Source, strconv.Itoa(k.Port), k.Target, k.Op}
}

var testLabels = Labels[testKey]{Names: []string{"source", "port", "target", "op"}, Values: testKey.values, PerKey: []string{"target"}}

// The test families, as the exporter's: a histogram, counters with a
// label of their own that sorts amid the set's (result after port,
// status after source), plain counters and gauges.
const (
	tLatency = iota
	tErrors
	tProbes
	tUp
	tLast
	tSent
)

var testFamilies = []Family{
	tLatency: {Name: "rdma_test_latency_seconds", Help: "Round trips, in seconds.", Kind: KindHistogram, Buckets: testBuckets},
	tErrors:  {Name: "rdma_test_errors_total", Help: "Errors by status.", Kind: KindCounter, Label: "status"},
	tProbes:  {Name: "rdma_test_probes_total", Help: "Probes by result.", Kind: KindCounter, Label: "result"},
	tUp:      {Name: "rdma_test_up", Help: "Whether the last probe succeeded \\ or not,\nin two lines.", Kind: KindGauge},
	tLast:    {Name: "rdma_test_last_seconds", Help: "How long the last probe took, in seconds.", Kind: KindGauge},
	tSent:    {Name: "rdma_test_sent_total", Help: "Messages sent.", Kind: KindCounter},
}

func newTestSet(t testing.TB) *Set[testKey] {
	t.Helper()
	s, err := New(testLabels, testFamilies)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fixedFill updates a few keys, one family of each shape, at fixed
// values.
func fixedFill(s *Set[testKey]) {
	at := time.Unix(1700000000, 0)
	a := testKey{Source: "node-a", Target: "10.0.0.2:18520", Op: "write", Port: 1}
	b := testKey{Source: "node-a", Target: "10.0.0.1:18520", Op: "read", Port: 2}
	s.Update(a, func(u Series) {
		u.Set(tUp, 1)
		u.Set(tLast, 0.003)
		u.AddLabelled(tProbes, "success", 1)
		u.AddLabelled(tProbes, "error", 0)
		u.Histogram(tLatency).Observe(1.5e-6, 2, at)
	})
	s.Update(b, func(u Series) {
		u.Set(tUp, 0)
		u.AddLabelled(tErrors, "RETRY_EXC_ERR", 1)
		u.AddLabelled(tProbes, "completion_error", 1)
		u.Add(tSent, 20)
		u.Histogram(tLatency)
	})
}

// randomFill updates n keys at random: every shape of series, samples
// spread over six decades (native buckets in several spans, the schema
// brought down), zeros, label values that need escaping, and a few keys
// forgotten again.
func randomFill(s *Set[testKey], r *rand.Rand, n int) {
	at := time.Unix(1700000000, 123456789)
	statuses := []string{"RETRY_EXC_ERR", "REM_ACCESS_ERR", "RNR_RETRY_EXC_ERR", "WR_FLUSH_ERR"}
	results := []string{"success", "completion_error", "timeout", "error"}
	for i := range n {
		k := testKey{Source: "node-a", Target: fmt.Sprintf("10.%d.%d.%d:18520", i%3, i/7, r.IntN(5)), Op: []string{"write", "read", "send"}[r.IntN(3)], Port: 1 + r.IntN(2)}
		if i%11 == 0 {
			k.Source = "a \"quoted\\ name\nwith a line"
		}
		var h *Histogram
		s.Update(k, func(u Series) {
			for range r.IntN(6) {
				switch r.IntN(6) {
				case 0:
					u.AddLabelled(tErrors, statuses[r.IntN(len(statuses))], 1)
				case 1:
					u.AddLabelled(tProbes, results[r.IntN(len(results))], float64(r.IntN(3)))
				case 2:
					u.Set(tUp, float64(r.IntN(2)))
				case 3:
					u.Set(tLast, r.Float64())
				case 4:
					u.Add(tSent, float64(r.IntN(100)))
				default:
					h = u.Histogram(tLatency)
				}
			}
		})
		if h != nil {
			for j := range r.IntN(300) {
				v := 1e-6 * math.Pow(10, 6*r.Float64())
				if j%5 == 0 {
					v = 0
				}
				h.Observe(v, 1, at.Add(time.Duration(i)*time.Second))
			}
		}
		if i%13 == 0 {
			s.Forget(k)
		}
	}
}

// TestNewChecks: New refuses, with an error naming the family or label,
// what the encoders could not write or would write wrong.
func TestNewChecks(t *testing.T) {
	fam := func(f Family) []Family { return []Family{f} }
	gauge := Family{Name: "rdma_test_up", Help: "Up.", Kind: KindGauge}
	for _, tc := range []struct {
		name     string
		labels   Labels[testKey]
		families []Family
		want     string
	}{
		{name: "no values", labels: Labels[testKey]{Names: testLabels.Names}, families: fam(gauge), want: "Labels.Values is nil"},
		{name: "no labels", labels: Labels[testKey]{Values: testKey.values}, families: fam(gauge), want: "Labels.Names is empty"},
		{name: "bad label", labels: Labels[testKey]{Names: []string{"source", "port-number"}, Values: testKey.values}, families: fam(gauge), want: `label "port-number" (Labels.Names[1])`},
		{name: "le", labels: Labels[testKey]{Names: []string{"le"}, Values: testKey.values}, families: fam(gauge), want: `label "le"`},
		{name: "label twice", labels: Labels[testKey]{Names: []string{"source", "source"}, Values: testKey.values}, families: fam(gauge), want: `label "source" is named twice`},
		{name: "unknown per-key label", labels: Labels[testKey]{Names: []string{"source"}, Values: testKey.values, PerKey: []string{"target"}}, families: fam(gauge), want: `PerKey names "target"`},
		{name: "bad name", labels: testLabels, families: fam(Family{Name: "rdma test", Kind: KindGauge}), want: "family 0 (rdma test): not a metric name"},
		{name: "name twice", labels: testLabels, families: []Family{gauge, gauge}, want: "family 1 (rdma_test_up): the name is taken"},
		{name: "bad kind", labels: testLabels, families: fam(Family{Name: "rdma_test_x", Kind: 7}), want: "kind Kind(7)"},
		{name: "labelled histogram", labels: testLabels, families: fam(Family{Name: "rdma_test_seconds", Kind: KindHistogram, Buckets: testBuckets, Label: "status"}), want: "a histogram has no label of its own"},
		{name: "no buckets", labels: testLabels, families: fam(Family{Name: "rdma_test_seconds", Kind: KindHistogram}), want: "a histogram needs finite upper bounds"},
		{name: "buckets out of order", labels: testLabels, families: fam(Family{Name: "rdma_test_seconds", Kind: KindHistogram, Buckets: []float64{1, 3, 2}}), want: "Buckets [1 3 2]"},
		{name: "bucket twice", labels: testLabels, families: fam(Family{Name: "rdma_test_seconds", Kind: KindHistogram, Buckets: []float64{1, 1}}), want: "strictly ascending"},
		{name: "+Inf bucket", labels: testLabels, families: fam(Family{Name: "rdma_test_seconds", Kind: KindHistogram, Buckets: []float64{1, math.Inf(1)}}), want: "finite"},
		{name: "gauge with buckets", labels: testLabels, families: fam(Family{Name: "rdma_test_up", Kind: KindGauge, Buckets: []float64{1}}), want: "Buckets are for histograms, not a gauge"},
		{name: "own label is the set's", labels: testLabels, families: fam(Family{Name: "rdma_test_total", Kind: KindCounter, Label: "port"}), want: `label "port" is not a label name, or is one of the set's`},
		// Written after a comma into the key's rendered labels, it
		// cannot go first.
		{name: "own label sorts first", labels: testLabels, families: fam(Family{Name: "rdma_test_total", Kind: KindCounter, Label: "device"}), want: `label "device" sorts before every label of the set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.labels, tc.families)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
	if _, err := New(testLabels, testFamilies); err != nil {
		t.Errorf("the test families: %v", err)
	}
}

// TestSeriesShapes: a method used on a family of another shape panics,
// naming the family, rather than writing a series the encoders do not
// expect.
func TestSeriesShapes(t *testing.T) {
	s := newTestSet(t)
	k := testKey{Source: "a", Target: "b", Op: "write", Port: 1}
	for _, tc := range []struct {
		name string
		use  func(Series)
		want string
	}{
		{name: "Add on a histogram", use: func(u Series) { u.Add(tLatency, 1) }, want: "Add on rdma_test_latency_seconds"},
		{name: "Set on a labelled family", use: func(u Series) { u.Set(tProbes, 1) }, want: "Set on rdma_test_probes_total"},
		{name: "AddLabelled on a plain family", use: func(u Series) { u.AddLabelled(tSent, "x", 1) }, want: "AddLabelled on rdma_test_sent_total"},
		{name: "Histogram of a gauge", use: func(u Series) { u.Histogram(tUp) }, want: "Histogram on rdma_test_up, a gauge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("panic %v, want one with %q", r, tc.want)
				}
			}()
			s.Update(k, tc.use)
		})
	}
}

// TestUpdateAndForget: adding 0 creates a series and keeps one's value;
// Forget removes every series of the key and counts them.
func TestUpdateAndForget(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s := newTestSet(t)
	reg.MustRegister(s)
	k := testKey{Source: "node-a", Target: "10.0.0.1:18520", Op: "write", Port: 1}
	other := k
	other.Target = "10.0.0.2:18520"
	s.Update(k, func(u Series) {
		u.Add(tSent, 3)
		u.AddLabelled(tProbes, "success", 2)
		u.Histogram(tLatency).Observe(1e-5, 1, time.Now())
	})
	s.Update(k, func(u Series) {
		u.Add(tSent, 0)
		u.AddLabelled(tProbes, "success", 0)
		u.AddLabelled(tProbes, "error", 0)
		u.Add(tUp, 0)
	})
	s.Update(other, func(u Series) { u.Set(tUp, 1) })
	const want = `
# HELP rdma_test_probes_total Probes by result.
# TYPE rdma_test_probes_total counter
rdma_test_probes_total{op="write",port="1",result="error",source="node-a",target="10.0.0.1:18520"} 0
rdma_test_probes_total{op="write",port="1",result="success",source="node-a",target="10.0.0.1:18520"} 2
# HELP rdma_test_sent_total Messages sent.
# TYPE rdma_test_sent_total counter
rdma_test_sent_total{op="write",port="1",source="node-a",target="10.0.0.1:18520"} 3
# HELP rdma_test_up Whether the last probe succeeded \\ or not,\nin two lines.
# TYPE rdma_test_up gauge
rdma_test_up{op="write",port="1",source="node-a",target="10.0.0.1:18520"} 0
rdma_test_up{op="write",port="1",source="node-a",target="10.0.0.2:18520"} 1
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "rdma_test_probes_total", "rdma_test_sent_total", "rdma_test_up"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "rdma_test_latency_seconds"); n != 1 {
		t.Errorf("%d latency series, want 1", n)
	}
	if n := s.Forget(k); n != 5 {
		t.Errorf("Forget: %d series, want 5 (2 results, sent, up, the histogram)", n)
	}
	if n := s.Forget(k); n != 0 {
		t.Errorf("Forget again: %d series, want 0", n)
	}
	if n := testutil.CollectAndCount(reg); n != 1 {
		t.Errorf("%d series left, want the other key's 1", n)
	}
}
