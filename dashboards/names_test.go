package dashboards_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	dto "github.com/prometheus/client_model/go"

	"github.com/rdmarun/rdmarun/dashboards"
	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/exporter/collector"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/exporter/doctorcollector"
	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/prometheus/rules"
	"github.com/rdmarun/rdmarun/rdma"
)

// exposition is what an rdmarun_exporter exposes, from its own code: the
// probe metrics with one latency and one bandwidth series initialised,
// the scheduler and reload metrics, build info, and the port collector
// over the collector's sysfs fixtures (an rxe and an mlx5 device) and its
// roce tree (RoCE ports of mlx5, bnxt and ice with pause counters). It
// maps each family name to its type and to its series' labels.
var collectorTestdata = filepath.Join("..", "exporter", "collector", "testdata")

type exposition struct {
	types  map[string]string
	series map[string][]map[string]string
}

func expose(t *testing.T) exposition {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m := prober.NewMetrics(reg)
	m.Init(prober.Key{Source: "node-a", Device: "rxe0", Port: 1, Target: "node-b", Op: rdma.OpWriteImm, Size: 2, Mode: rdma.ModeEvent}, false)
	m.Init(prober.Key{Source: "node-a", Device: "rxe0", Port: 1, Target: "node-b", Op: rdma.OpWrite, Size: 1 << 20, Mode: rdma.ModeEvent}, true)
	prober.NewScheduler(reg, nil, m, 0, 0, nil)
	config.NewSafeConfig(reg)
	reg.MustRegister(versioncollector.NewCollector("rdmarun_exporter"))
	reg.MustRegister(collector.NewPortCollector(filepath.Join(collectorTestdata, "sysfs"), nil))
	// The doctor over its deliberately broken host, which has a check at
	// every status a rule or panel compares with.
	env, err := doctor.EnvAt(filepath.Join("..", "doctor", "testdata", "broken"))
	if err != nil {
		t.Fatal(err)
	}
	doc := doctorcollector.NewRunner(func() doctor.Env { return env }, nil)
	doc.Apply(config.Doctor{Enabled: true, Interval: time.Minute})
	doc.RunOnce()
	reg.MustRegister(doctorcollector.NewCollector(doc))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// The counter categories' pause series need RoCE ports with netdevs,
	// which the sysfs fixture has not: the collector's roce tree has them,
	// with saved ethtool statistics. Its own registry, since both trees
	// export rdmarun_port_collector_errors, and only the families the
	// sysfs tree lacks, since both name devices rxe0 and mlx5_0.
	roce := prometheus.NewPedanticRegistry()
	ports := collector.NewPortCollector(filepath.Join(collectorTestdata, "roce", "class", "infiniband"), nil)
	ports.ReadEthtool = func(netdev string) (map[string]uint64, error) {
		b, err := os.ReadFile(filepath.Join(collectorTestdata, "roce", "ethtool", netdev))
		if err != nil {
			return nil, err
		}
		return ethtool.Parse(string(b))
	}
	roce.MustRegister(ports)
	roceFamilies, err := roce.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range roceFamilies {
		if !slices.ContainsFunc(mfs, func(have *dto.MetricFamily) bool { return have.GetName() == mf.GetName() }) {
			mfs = append(mfs, mf)
		}
	}
	e := exposition{types: map[string]string{}, series: map[string][]map[string]string{}}
	for _, mf := range mfs {
		e.types[mf.GetName()] = mf.GetType().String()
		for _, s := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range s.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			e.series[mf.GetName()] = append(e.series[mf.GetName()], l)
		}
	}
	for _, want := range []string{"rdma_probe_latency_seconds", "rdmarun_port_hw_counters_total", "rdmarun_exporter_build_info", "rdmarun_doctor_check_severity", "rdmarun_port_pause_seconds_total"} {
		if _, ok := e.types[want]; !ok {
			t.Fatalf("the exposition lacks %s; got %v", want, e.types)
		}
	}
	return e
}

// has reports whether the exporter exposes a series called name: a
// family, or a histogram family's _bucket, _sum or _count.
func (e exposition) has(name string) bool {
	if _, ok := e.types[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && e.types[base] == "HISTOGRAM" {
			return true
		}
	}
	return false
}

// strings and names: metric names are identifiers outside quoted
// strings, so a label value such as driver="rdma_rxe" is not one.
var (
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	ident  = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
)

// collectorPrefixes are the rdmarun_* families of the collectors that
// expose builds; the exporter's other rdmarun_exporter_* families are
// registered by package main and the target manager, which expose does
// not run, so their names are not checked here.
var collectorPrefixes = []string{"rdmarun_port_", "rdmarun_doctor_"}

func rdmaNames(expr string) []string {
	var out []string
	for _, id := range ident.FindAllString(quoted.ReplaceAllString(expr, `""`), -1) {
		if strings.HasPrefix(id, "rdma_") || strings.HasPrefix(id, "rdma:") || slices.ContainsFunc(collectorPrefixes, func(p string) bool { return strings.HasPrefix(id, p) }) {
			out = append(out, id)
		}
	}
	return out
}

type source struct{ where, expr string }

// sources lists every dashboard query and every rule expression.
func sources(t *testing.T) ([]source, map[string]bool) {
	t.Helper()
	qs, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	var out []source
	for _, q := range qs {
		e, _ := q.PromQL()
		out = append(out, source{q.Dashboard + " " + q.Panel + q.Variable + q.Annotation + " " + q.RefID, e})
	}
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]bool{}
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					records[r.Record] = true
				}
				out = append(out, source{f.Name + " " + r.Record + r.Alert, r.Expr})
			}
		}
	}
	return out, records
}

// TestMetricNamesExist: every rdma_* metric a dashboard or rule reads is
// one the exporter exposes, and every rdma:* one is a recording rule
// that ships, so a renamed metric breaks this test, not a dashboard.
func TestMetricNamesExist(t *testing.T) {
	e := expose(t)
	srcs, records := sources(t)
	used := map[string]bool{}
	for _, s := range srcs {
		for _, name := range rdmaNames(s.expr) {
			used[name] = true
			switch {
			case strings.HasPrefix(name, "rdma:"):
				if !records[name] {
					t.Errorf("%s: %s is not a recording rule in prometheus/rules", s.where, name)
				}
			case !e.has(name):
				t.Errorf("%s: the exporter exposes no %s", s.where, name)
			}
		}
	}
	if len(used) < 10 {
		t.Fatalf("found only %d names in %d queries: the name scan is broken", len(used), len(srcs))
	}
	// The exporter's families that nothing reads, for whoever adds a
	// metric and wonders whether a panel should show it.
	var unused []string
	for name := range e.types {
		if (strings.HasPrefix(name, "rdma_") || slices.ContainsFunc(collectorPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })) && !used[name] && !used[name+"_bucket"] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	t.Logf("exposed but read by no dashboard or rule: %v", unused)
}

func TestNameScan(t *testing.T) {
	got := rdmaNames(`sum by (target) (rate(rdma_probes_total{result="success", driver="rdma_rxe"}[5m])) / rdma:x:y + rdmarun_doctor_check_severity * rdmarun_exporter_mesh_epoch`)
	if want := []string{"rdma_probes_total", "rdma:x:y", "rdmarun_doctor_check_severity"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("rdmaNames = %v, want %v", got, want)
	}
}

// TestRetryCountersCoverBothDrivers: the retry-counter list of the
// recording rules picks counters from both fixture devices, soft-RoCE
// and mlx5, and leaves out the traffic counters.
func TestRetryCountersCoverBothDrivers(t *testing.T) {
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	var expr string
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Record == "rdma:port_retry_counters:rate5m" {
					expr = r.Expr
				}
			}
		}
	}
	m := regexp.MustCompile(`name=~"([^"]+)"`).FindStringSubmatch(expr)
	if m == nil {
		t.Fatalf("rdma:port_retry_counters:rate5m has no name=~ matcher: %q", expr)
	}
	// PromQL anchors label regexes.
	re := regexp.MustCompile("^(?:" + m[1] + ")$")
	picked := map[string][]string{}
	for _, l := range expose(t).series["rdmarun_port_hw_counters_total"] {
		if re.MatchString(l["name"]) && l["port"] == "1" {
			picked[l["device"]] = append(picked[l["device"]], l["name"])
		}
	}
	for dev, want := range map[string][]string{
		"rxe0":   {"completer_retry_err", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err", "rcvd_seq_err", "retry_exceeded_err", "retry_rnr_exceeded_err", "send_rnr_err"},
		"mlx5_0": {"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_sequence", "packet_seq_err", "rnr_nak_retry_err"},
	} {
		got := picked[dev]
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: the retry counters picked are %v, want %v", dev, got, want)
		}
	}
	for _, notRetry := range []string{"rcvd_pkts", "sent_pkts", "rdma_sends", "np_cnp_sent", "rp_cnp_handled", "out_of_buffer", "lifespan"} {
		if re.MatchString(notRetry) {
			t.Errorf("%s is counted as a retry counter", notRetry)
		}
	}
}
