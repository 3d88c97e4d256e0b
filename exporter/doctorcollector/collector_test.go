package doctorcollector

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/internal/promtooltest"
)

// hosts are the doctor's saved hosts (doctor/testdata).
var hosts = []string{"mlx5-roce", "bnxt-roce", "mlx5-ib", "rxe", "broken"}

// fixtureRunner is a runner over a saved host that has run once, on a
// clock that starts at 2026-12-01T12:00:00Z and moves 12 ms per reading,
// so the exposition is the same at every run.
func fixtureRunner(t testing.TB, host string) *Runner {
	t.Helper()
	env, err := doctor.EnvAt(filepath.Join("..", "..", "doctor", "testdata", host))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(func() doctor.Env { return env }, nil)
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r.now = func() time.Time {
		clock = clock.Add(12 * time.Millisecond)
		return clock
	}
	r.Apply(config.Doctor{Enabled: true, Interval: time.Minute})
	r.RunOnce()
	return r
}

// TestExposition pins the whole exposition over each saved host.
func TestExposition(t *testing.T) {
	for _, host := range hosts {
		t.Run(host, func(t *testing.T) {
			golden.Check(t, host+".prom", exposition(t, NewCollector(fixtureRunner(t, host))))
		})
	}
}

// TestSeverityIsTheDoctorsStatus: every check of the report is one series
// whose value is its status, and nothing else is.
func TestSeverityIsTheDoctorsStatus(t *testing.T) {
	for _, host := range hosts {
		r := fixtureRunner(t, host)
		rep, _, _, ok := r.Last()
		if !ok || len(rep.Checks) < 10 {
			t.Fatalf("%s: the runner kept %d checks (ok %v)", host, len(rep.Checks), ok)
		}
		got := gather(t, NewCollector(r))["rdmarun_doctor_check_severity"]
		if len(got) != len(rep.Checks) {
			t.Errorf("%s: %d series for %d checks", host, len(got), len(rep.Checks))
		}
		for _, c := range rep.Checks {
			port := ""
			if c.Port != 0 {
				port = strconv.Itoa(c.Port)
			}
			v, ok := find(got, map[string]string{"check": c.Name, "device": c.Device, "port": port})
			if !ok || v != float64(c.Status) {
				t.Errorf("%s: %s on %q port %q = %v (found %v), want %v (%s)", host, c.Name, c.Device, port, v, ok, float64(c.Status), c.Status)
			}
		}
	}
}

// TestBrokenHost: the checks the alerts key on have the values the
// alerts compare with, on the host built to fail them.
func TestBrokenHost(t *testing.T) {
	got := gather(t, NewCollector(fixtureRunner(t, "broken")))
	for _, tc := range []struct {
		check, device, port string
		want                float64
	}{
		{"pcie.width", "mlx5_0", "", 4},
		{"pcie.speed", "mlx5_0", "", 0},
		{"mtu.netdev", "mlx5_0", "1", 4},
		{"mtu.peer", "mlx5_0", "1", 1},
		{"port.rate", "mlx5_0", "1", 2},
		{"roce.pfc", "mlx5_0", "1", 2},
		{"port.link_downed", "mlx5_0", "1", 3},
		{"limits.memlock", "", "", 4},
		{"cpu.governor", "", "", 4},
	} {
		labels := map[string]string{"check": tc.check, "device": tc.device, "port": tc.port}
		if v, ok := find(got["rdmarun_doctor_check_severity"], labels); !ok || v != tc.want {
			t.Errorf("rdmarun_doctor_check_severity%v = %v (found %v), want %v", labels, v, ok, tc.want)
		}
	}
	if v := got["rdmarun_doctor_last_run_timestamp_seconds"]; len(v) != 1 || v[0].value != 1796126400.012 {
		t.Errorf("last run timestamp = %v, want one sample of 1796126400.012", v)
	}
	if v := got["rdmarun_doctor_last_run_duration_seconds"]; len(v) != 1 || v[0].value != 0.012 {
		t.Errorf("last run duration = %v, want one sample of 0.012", v)
	}
}

func TestPromtool(t *testing.T) {
	for _, host := range hosts {
		t.Run(host, func(t *testing.T) {
			text := exposition(t, NewCollector(fixtureRunner(t, host)))
			// An exposition without check series would pass vacuously.
			if !bytes.Contains(text, []byte("rdmarun_doctor_check_severity{")) {
				t.Fatalf("no check series over %s:\n%s", host, text)
			}
			if out, err := promtooltest.CheckMetrics(t, text); err != nil || out != "" {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}

func TestLint(t *testing.T) {
	c := NewCollector(fixtureRunner(t, "broken"))
	if n := testutil.CollectAndCount(c); n < 10 {
		t.Fatalf("collected %d metrics", n)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestNothingBeforeTheFirstRun: no series claims a state the doctor has
// not looked at, and none outlives the doctor being disabled.
func TestNothingBeforeTheFirstRun(t *testing.T) {
	r := NewRunner(func() doctor.Env { return doctor.Env{} }, nil)
	c := NewCollector(r)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("before any run: %d metrics, want 0", n)
	}
	r.Apply(config.Doctor{Enabled: true, Interval: time.Minute})
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("enabled, before the first run: %d metrics, want 0", n)
	}
	r.RunOnce()
	if n := testutil.CollectAndCount(c); n < 3 {
		t.Errorf("after a run: %d metrics, want the checks, the timestamp and the duration", n)
	}
	r.Apply(config.Doctor{Enabled: false, Interval: time.Minute})
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("disabled: %d metrics, want 0", n)
	}
	// A run already under way when the doctor is disabled keeps nothing.
	r.RunOnce()
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("a run while disabled: %d metrics, want 0", n)
	}
}

func TestSeriesDeduplicates(t *testing.T) {
	rep := doctor.Report{Checks: []doctor.Check{
		{Name: "cpu.governor", Status: doctor.OK},
		{Name: "port.rate", Device: "d", Port: 1, Status: doctor.Warn},
		{Name: "port.rate", Device: "d", Port: 1, Status: doctor.Fail},
		{Name: "port.rate", Device: "d", Port: 1, Status: doctor.OK},
		{Name: "port.rate", Device: "d", Port: 2, Status: doctor.CannotTell},
		{Name: "pcie.width", Device: "d", Status: doctor.NotApplicable},
	}}
	want := []checkSeries{
		{"cpu.governor", "", "", doctor.OK},
		{"port.rate", "d", "1", doctor.Fail},
		{"port.rate", "d", "2", doctor.CannotTell},
		{"pcie.width", "d", "", doctor.NotApplicable},
	}
	got := series(rep)
	if len(got) != len(want) {
		t.Fatalf("series = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("series[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// exposition renders c in the text format, through a pedantic registry
// that also checks the metrics against their descriptions and for
// duplicate series.
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range families(t, c) {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

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

type sample struct {
	labels map[string]string
	value  float64
}

func gather(t *testing.T, c prometheus.Collector) map[string][]sample {
	t.Helper()
	out := map[string][]sample{}
	for _, mf := range families(t, c) {
		for _, m := range mf.GetMetric() {
			s := sample{labels: map[string]string{}, value: m.GetGauge().GetValue()}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			out[mf.GetName()] = append(out[mf.GetName()], s)
		}
	}
	return out
}

// find matches labels exactly; an empty value matches a label the
// registry left out, as Prometheus treats them alike.
func find(samples []sample, labels map[string]string) (float64, bool) {
next:
	for _, s := range samples {
		for k, v := range labels {
			if s.labels[k] != v {
				continue next
			}
		}
		for k, v := range s.labels {
			if labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}
