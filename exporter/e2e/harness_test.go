//go:build testbed

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The testbed's two soft-RoCE ends: rxe0 on veth0 (10.0.0.1) and rxe1 on
// veth1 (10.0.0.2), their traffic crossing the veth pair.
const (
	addrA = "10.0.0.1"
	addrB = "10.0.0.2"
)

// exporter is a running rdmarun_exporter process.
type exporter struct {
	name    string
	web     string // host:port of its HTTP server
	cmd     *exec.Cmd
	cfgFile string
	logFile string
	waited  chan error
	spec    exporterSpec // for those started by startExporter
}

// exporterSpec says what one exporter probes and where it answers.
type exporterSpec struct {
	name      string
	device    string
	responder string // host:port its responder listens on
	web       string
	target    string // name of the other exporter
	targetAt  string // host:port of the other exporter's responder
	module    string // the YAML of the "default" module
}

// probeModule is short enough for a test and slow enough for emulation:
// a round of 20 write_imm ping-pongs in event mode (the default) every
// 3 s, and a 200 ms bandwidth probe as often as the 1/10 duty cycle lets
// it. Two settings keep a healthy link free of retries under emulation,
// where a vCPU can stall for tens of milliseconds: a shallow window of
// small messages, and an ACK timeout of 134 ms (qp timeout 15) instead
// of rxe's 67 ms. A dead path still gives RETRY_EXC_ERR after 4 x 134 ms,
// inside the 1.25 s stall deadline.
const probeModule = `{count: 20, interval: 3s, timeout: 2500ms, qp: {timeout: 15}, bandwidth: {size: 4KiB, duration: 200ms, interval: 3s, tx_depth: 4}}`

func binary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("RDMARUN_EXPORTER_BIN")
	if bin == "" {
		t.Fatal("RDMARUN_EXPORTER_BIN is not set (make testbed-test sets it)")
	}
	return bin
}

// startExporter writes a config and starts rdmarun_exporter with it; it
// returns once /metrics answers. The exporter answers probes from the
// start but probes its target only once setProbing turns that on.
func startExporter(t *testing.T, s exporterSpec) *exporter {
	t.Helper()
	dir := t.TempDir()
	writeToken(t, dir)
	e := runExporter(t, dir, s.name, s.web, s.config(false))
	e.spec = s
	return e
}

// writeToken writes the token every exporter and responder of these
// tests shares into dir/token, where their configs name it, and returns
// its path.
func writeToken(t *testing.T, dir string) string {
	t.Helper()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("e2e-shared-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return token
}

// config is the exporter's config file, with or without its target.
func (s exporterSpec) config(probing bool) string {
	targets := "targets: {}\n"
	if probing {
		targets = fmt.Sprintf("targets:\n  static:\n    - {name: %s, address: \"%s\", module: default}\n", s.target, s.targetAt)
	}
	return fmt.Sprintf(`modules:
  default: %s
%sresponder:
  listen: "%s"
  device: %s
  token_file: token
`, s.module, targets, s.responder, s.device)
}

// setProbing rewrites the exporter's config with or without its target
// and reloads it through POST /-/reload; the process stays the same.
// Without a target the exporter still answers the other's probes.
func (e *exporter) setProbing(t *testing.T, on bool) {
	t.Helper()
	if err := os.WriteFile(e.cfgFile, []byte(e.spec.config(on)), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Post("http://"+e.web+"/-/reload", "", nil)
	if err != nil {
		t.Fatalf("reload %s: %v", e.name, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reload %s: %s: %s", e.name, resp.Status, body)
	}
	if ok := e.scrape(t).sum("rdmarun_exporter_config_last_reload_successful", nil); ok != 1 {
		t.Fatalf("reload %s: rdmarun_exporter_config_last_reload_successful is %v", e.name, ok)
	}
}

// runExporter starts rdmarun_exporter with the config cfg, written into dir,
// and extra flags; it returns once /metrics answers.
func runExporter(t *testing.T, dir, name, web, cfg string, flags ...string) *exporter {
	t.Helper()
	return runExporterBinary(t, binary(t), dir, name, web, cfg, flags...)
}

// runExporterBinary is runExporter with another build of the exporter.
func runExporterBinary(t *testing.T, bin, dir, name, web, cfg string, flags ...string) *exporter {
	t.Helper()
	cfgFile := filepath.Join(dir, "rdmarun_exporter.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &exporter{name: name, web: web, cfgFile: cfgFile, logFile: filepath.Join(dir, "exporter.log"), waited: make(chan error, 1)}
	logf, err := os.Create(e.logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	args := []string{"--config.file=" + cfgFile, "--web.listen-address=" + web}
	if !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--log.level") }) {
		args = append(args, "--log.level=debug")
	}
	e.cmd = exec.Command(bin, append(args, flags...)...)
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { e.waited <- e.cmd.Wait() }()
	t.Cleanup(func() {
		if e.stop() != nil && t.Failed() {
			t.Logf("exporter %s log:\n%s", e.name, e.log())
		}
		if t.Failed() {
			t.Logf("exporter %s log (tail):\n%s", e.name, tail(e.log(), 40))
		}
	})
	waitFor(t, 15*time.Second, "exporter "+name+" serving /metrics", func() (bool, string) {
		_, err := e.get("/metrics")
		return err == nil, fmt.Sprint(err)
	})
	return e
}

func (e *exporter) log() string {
	b, _ := os.ReadFile(e.logFile)
	return string(b)
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// stop sends SIGTERM and waits at most 15 s for the process to end.
func (e *exporter) stop() error {
	if e.cmd.Process == nil {
		return nil
	}
	select {
	case err := <-e.waited:
		e.waited <- err
		return err
	default:
	}
	_ = e.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-e.waited:
		e.waited <- err
		return err
	case <-time.After(15 * time.Second):
		_ = e.cmd.Process.Kill()
		err := <-e.waited
		e.waited <- err
		return fmt.Errorf("did not stop within 15 s of SIGINT: %v", err)
	}
}

// httpClient never reuses connections, so the scraper's own keep-alive
// connections do not show up in the exporter's goroutine and fd counts.
var httpClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func (e *exporter) get(path string) (string, error) {
	resp, err := httpClient.Get("http://" + e.web + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b), nil
}

// scrape is one parsed /metrics response.
type scrape map[string]*dto.MetricFamily

func (e *exporter) scrape(t *testing.T) scrape {
	t.Helper()
	body, err := e.get("/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", e.name, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s's /metrics: %v", e.name, err)
	}
	return mf
}

// labels is a partial match: every given label must have that value.
type labels map[string]string

func (l labels) match(m *dto.Metric) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := l[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(l)
}

// sum adds up the matching series of a counter or gauge; NaN when there is
// no such series, so a missing metric cannot pass as zero.
func (s scrape) sum(name string, l labels) float64 {
	mf, ok := s[name]
	if !ok {
		return math.NaN()
	}
	total, found := 0.0, false
	for _, m := range mf.GetMetric() {
		if !l.match(m) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	if !found {
		return math.NaN()
	}
	return total
}

// histogram is the cumulative bucket counts of the matching histogram
// series, summed.
type histogram struct {
	count   uint64
	buckets map[float64]uint64 // upper bound -> cumulative count
}

func (s scrape) histogram(name string, l labels) histogram {
	h := histogram{buckets: map[float64]uint64{}}
	for _, m := range s[name].GetMetric() {
		if !l.match(m) || m.Histogram == nil {
			continue
		}
		h.count += m.GetHistogram().GetSampleCount()
		for _, b := range m.GetHistogram().GetBucket() {
			h.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	return h
}

// above is how many samples of h lie above bound (a bucket boundary).
func (h histogram) above(bound float64) uint64 {
	return h.count - h.buckets[bound]
}

// minus is the histogram of what was observed between two scrapes.
func (h histogram) minus(o histogram) histogram {
	d := histogram{count: h.count - o.count, buckets: map[float64]uint64{}}
	for b, c := range h.buckets {
		d.buckets[b] = c - o.buckets[b]
	}
	return d
}

// plus is the histogram of what h and o observed together.
func (h histogram) plus(o histogram) histogram {
	d := histogram{count: h.count + o.count, buckets: map[float64]uint64{}}
	for b, c := range h.buckets {
		d.buckets[b] = c
	}
	for b, c := range o.buckets {
		d.buckets[b] += c
	}
	return d
}

// bounds are h's bucket boundaries, in order.
func (h histogram) bounds() []float64 {
	bs := make([]float64, 0, len(h.buckets))
	for b := range h.buckets {
		bs = append(bs, b)
	}
	sort.Float64s(bs)
	return bs
}

// bound is the smallest bucket boundary at or above v.
func (h histogram) bound(v float64) float64 {
	for _, b := range h.bounds() {
		if b >= v {
			return b
		}
	}
	return math.Inf(1)
}

// quantileBound is the upper bound of the bucket of h holding its q-th
// quantile, or 0 for an empty h.
func (h histogram) quantileBound(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	for _, b := range h.bounds() {
		if h.buckets[b] >= rank {
			return b
		}
	}
	return math.Inf(1)
}

// waitFor polls cond every 200 ms until it holds, failing the test after
// limit with cond's last explanation.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, why := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v: %s", what, limit, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rdmaObjects counts the kernel's RDMA objects (PDs, CQs, QPs, MRs,
// contexts, SRQs, CM ids) over every device, as `rdma resource show`
// reports them: the resources a leaking prober would leave behind.
func rdmaObjects(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("rdma", "-j", "resource", "show").Output()
	if err != nil {
		t.Fatalf("rdma resource show: %v", err)
	}
	var devs []map[string]any
	if err := json.Unmarshal(out, &devs); err != nil {
		t.Fatalf("rdma resource show: %v: %s", err, out)
	}
	n := 0
	for _, d := range devs {
		for k, v := range d {
			if f, ok := v.(float64); ok && k != "ifindex" {
				n += int(f)
			}
		}
	}
	return n
}

// freePort is a TCP port nothing listens on right now.
func freePort(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
