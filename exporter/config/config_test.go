package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/rdma"
)

func TestLoadGood(t *testing.T) {
	c, err := Load("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	defQP := QP{Type: rdma.RC, RetryCnt: 3}
	want := &Config{
		Modules: map[string]Module{
			"default": {Op: rdma.OpWriteImm, Mode: rdma.ModeEvent, Sizes: []int{2}, QP: defQP, Count: 10, Warmup: 1, Interval: 15 * time.Second, Timeout: 5 * time.Second},
			"rc_read": {
				Op: rdma.OpRead, Mode: rdma.ModeBusyPoll, Sizes: []int{2, 4096, 65536},
				QP:    QP{Type: rdma.RC, Timeout: new(14), RetryCnt: 5, RNRRetry: new(6), MTU: new(1024)},
				Count: 20, Warmup: 3, Interval: 30 * time.Second, Timeout: 2 * time.Second,
				Bandwidth: &Bandwidth{Size: 1 << 20, Duration: 2 * time.Second, Interval: 10 * time.Minute, TxDepth: 16},
			},
			"uc_send": {
				Op: rdma.OpSend, Mode: rdma.ModeEvent, Sizes: []int{64}, QP: QP{Type: rdma.UC, RetryCnt: 3},
				Count: 10, Warmup: 1, Interval: 15 * time.Second, Timeout: 5 * time.Second,
				Bandwidth: &Bandwidth{Size: 1 << 20, Duration: time.Second, Interval: 5 * time.Minute},
				TLS:       ClientTLS{ServerName: "rdma.example", InsecureSkipVerify: true},
			},
			// An atomic's default size is its only legal one.
			"atomic": {Op: rdma.OpFetchAdd, Mode: rdma.ModeEvent, Sizes: []int{8}, QP: defQP, Count: 10, Warmup: 1, Interval: 15 * time.Second, Timeout: 5 * time.Second},
		},
		Targets: Targets{
			Static: []Target{
				{Name: "node-a", Address: "10.0.0.1:18520", Module: "default", DevicePort: 1, Labels: mustLabels(t, map[string]string{"rack": "r1", "rail": "0"})},
				{Name: "node-b", Address: "[fd00::2]:18520", Module: "rc_read", Device: "mlx5_0", DevicePort: 2},
			},
			Files: []string{"testdata/targets.d/rack1.yml", "/etc/rdmarun_exporter/rack2.yml"},
			DNS: []DNSTarget{
				{Name: "_rdma._tcp.svc.local", Module: "default", DevicePort: 1, Refresh: 30 * time.Second},
				{Name: "rdma-peers.ns.svc.cluster.local", Port: 18520, Module: "uc_send", Device: "rxe0", DevicePort: 2, Refresh: time.Minute},
			},
			MaxProbesPerSecond: 5,
			Jitter:             0.25,
			MaxPerModule:       500,
			MaxProbeSeries:     2000,
		},
		Responder: Responder{
			Listen: "127.0.0.1:9999", CMPort: 18521, Device: "rxe0", DevicePort: 2, TokenFile: "testdata/token",
			TLS:           TLS{CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem", ClientCAFile: "/etc/ca.pem", RelayCAFile: "testdata/tls/relay-ca.pem"},
			MaxConcurrent: 8, MaxMemory: "256MiB", maxMemory: 256 << 20, MaxQPs: 64, MaxTest: 2 * time.Minute,
			MaxSessions: 0, SessionIdle: time.Minute,
		},
		Mesh: Mesh{
			MaxTargets: 16, Rotate: 30 * time.Minute, Source: "node-c",
			Labels: map[string]string{"rack": "r1", "rail": "0"},
			Always: []MeshSelector{
				{Same: []string{"rack"}},
				{Same: []string{"rail"}, Match: map[string]string{"tor": "t1"}},
			},
			MaxProbesPerSecond: 20,
		},
		Doctor: Doctor{Enabled: true, Interval: 10 * time.Minute},
	}
	// The modules' complete tests are checked in TestModuleTests.
	for name, m := range c.Modules {
		m.Tests = nil
		c.Modules[name] = m
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load(good.yml) =\n%+v\nwant\n%+v", c, want)
	}
	if !c.Targets.DNS[0].SRV() || c.Targets.DNS[1].SRV() {
		t.Error("SRV(): want the _rdma._tcp name only")
	}
}

func TestParseDefaults(t *testing.T) {
	for _, in := range []string{"", "modules:\n", "targets: {}\nresponder: {}\n"} {
		c, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if c.Targets.MaxProbesPerSecond != 10 || c.Targets.Jitter != 0.1 || c.Targets.MaxPerModule != 1000 || c.Targets.MaxProbeSeries != 5000 {
			t.Errorf("Parse(%q) targets = %+v, want rate 10, jitter 0.1, max_per_module 1000, max_probe_series 5000", in, c.Targets)
		}
		if want := (Responder{Enabled: true, Listen: ":18520", CMPort: 18521, DevicePort: 1, Relay: true, MaxConcurrent: 4, MaxMemory: "1GiB", maxMemory: 1 << 30, MaxQPs: 64, MaxTest: 10 * time.Minute,
			MaxSessions: 256, SessionIdle: 5 * time.Minute}); c.Responder != want {
			t.Errorf("Parse(%q) responder = %+v, want %+v", in, c.Responder, want)
		}
	}
}

func TestLoadBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"bad-size-unit", `module "m": size "4XB" is not a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)`},
		{"unknown-module", `target "n1": module "c" is not defined; modules: a, b`},
		{"dns-unknown-module", `dns target "_rdma._tcp.example": module "x" is not defined; modules: m`},
		{"timeout-interval", `module "m": timeout 5s must be shorter than interval 5s`},
		{"bad-op", `module "m": unknown op "writ"; want one of send, send_imm, write, write_imm, read, fetch_add, cmp_swap`},
		{"read-uc", `module "rd": latency 2B: op read needs a response from the target, and UC has none; use qp_type rc`},
		{"write-event", `module "m": latency 2B: op write, measure latency, mode event: an RDMA WRITE makes no completion at its target, so its arrival can only be seen by polling memory; use op write_imm for event mode`},
		{"atomic-size", `module "m": latency 16B: op cmp_swap works on one 8-byte word; size must be 8, not 16`},
		{"retry-cnt", `module "m": qp: retry_cnt 8 out of range 0..7`},
		{"bandwidth-interval", `module "m": bandwidth: interval 30s is shorter than 10 x duration 5s; a bandwidth probe fills the link while it runs, so it may take at most 1/10 of the time`},
		{"bandwidth-duration", `module "m": bandwidth: duration -1s must be positive`},
		{"tls-client-half", `module "m": tls: cert_file and key_file go together`},
		{"bandwidth-tx-depth", `module "m": bandwidth: tx_depth -4 must be positive (or 0 for the default)`},
		{"jitter", `targets: jitter 0.7 is outside 0..0.5`},
		{"max-per-module", `targets: max_per_module 0 must be at least 1 (the default is 1000)`},
		{"max-probe-series", `targets: max_probe_series -1 must be at least 1 (the default is 5000)`},
		{"static-over-max-per-module", `targets: static has 3 targets of module "m", more than targets.max_per_module 2; raise it or list fewer`},
		{"static-over-max-probe-series", `targets: static makes 4 probe series (a target times its module's specs), more than targets.max_probe_series 3; raise it or list fewer`},
		{"dns-no-port", `dns target "peers.example": port is required for an A/AAAA name (1..65535); only SRV names (_service._proto.domain) carry their own`},
		{"static-no-port", `target "n1": address "10.0.0.1" must be host:port (missing port in address)`},
		{"device-port", `target "n1": device_port 0 is outside 1..255`},
		{"dns-device-port", `dns target "peers.example": device_port 256 is outside 1..255`},
		{"duplicate-target", `targets: duplicate target name "n1"`},
		{"warmup", `module "m": warmup 0: want 1 to 100000 round trips before the measured ones (a run's first round trip is its slowest: perftest leaves it out too)`},
		{"count", `module "m": count 100001: want 1 to 100000 round trips per probe (more is a benchmark: rdmarun bench)`},
		{"responder-relay-ca-missing", "responder: tls: relay_ca_file: ctrl: TLS CAFile testdata/no-such-ca.pem does not exist"},
		{"responder-tls-missing", "responder: tls: ctrl: TLS CertFile testdata/no-such-cert.pem does not exist\nctrl: TLS KeyFile testdata/no-such-key.pem does not exist"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := "testdata/invalid-" + tc.file + ".yml"
			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want error", path, c)
			}
			if want := "config " + path + ": " + tc.want; err.Error() != want {
				t.Errorf("Load(%s) error:\n got %q\nwant %q", path, err, want)
			}
		})
	}
}

// Every invalid-*.yml must have a row above, or a new file would pass
// unchecked.
func TestEveryInvalidFileIsTested(t *testing.T) {
	src, err := os.ReadFile("config_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/invalid-*.yml")
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "invalid-"), ".yml")
		if !strings.Contains(string(src), `{"`+name+`", `) {
			t.Errorf("%s has no row in TestLoadBadConfigs", f)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load("testdata/no-such.yml"); !os.IsNotExist(err) {
		t.Errorf("Load(missing) error = %v, want not-exist", err)
	}
}

// TestModuleQPZeros: retry_cnt 0 and timeout 0 are legal attributes, and
// a module that writes them probes with them, not with the defaults.
func TestModuleQPZeros(t *testing.T) {
	c, err := Parse([]byte("modules:\n  m: {qp: {retry_cnt: 0, timeout: 0}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Modules["m"].Tests {
		if s.QP.RetryCnt != 0 || s.QP.Timeout != 0 || s.QP.RNRRetry != rdma.DefaultQPAttrs().RNRRetry {
			t.Errorf("qp attrs %+v, want retry_cnt 0, timeout 0 and the default rnr_retry", s.QP)
		}
	}
}

func TestModuleTests(t *testing.T) {
	c, err := Load("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	specs := c.Modules["rc_read"].Tests
	if len(specs) != 4 {
		t.Fatalf("rc_read: %d specs, want 3 latency + 1 bandwidth", len(specs))
	}
	for i, size := range []int{2, 4096, 65536} {
		s := specs[i]
		if s.Measure != rdma.MeasureLatency || s.Size != size || s.Iterations != 20 || s.Warmup != 3 || s.Op != rdma.OpRead || s.Mode != rdma.ModeBusyPoll {
			t.Errorf("spec %d = %v, want read latency of %d bytes x20 after 3 warm-up in busy_poll", i, s, size)
		}
		if s.StallTimeout != rdma.Duration(time.Second) {
			t.Errorf("spec %d stall timeout %v, want half the module timeout 2s", i, time.Duration(s.StallTimeout))
		}
		want := rdma.DefaultQPAttrs()
		want.MTU, want.Timeout, want.RetryCnt, want.RNRRetry = 1024, 14, 5, 6
		if s.QP != want {
			t.Errorf("spec %d qp = %+v, want %+v", i, s.QP, want)
		}
	}
	bw := specs[3]
	if bw.Measure != rdma.MeasureBandwidth || bw.Size != 1<<20 || bw.Duration != rdma.Duration(2*time.Second) || bw.TxDepth != 16 {
		t.Errorf("bandwidth spec = %v", bw)
	}
	for name, m := range c.Modules {
		for _, s := range m.Tests {
			if err := s.Ready(); err != nil {
				t.Errorf("module %s: %v", name, err)
			}
		}
	}
}

// TestDefaultWarmup: a module without warmup takes a tenth of count, as
// the engine does, but never none, and at most the engine's 100; the
// engine gets the module's value.
func TestDefaultWarmup(t *testing.T) {
	for _, tc := range []struct{ count, want int }{{1, 1}, {9, 1}, {10, 1}, {25, 2}, {1000, 100}, {100000, 100}} {
		m := defaultModule
		m.Count = tc.count
		mod, err := m.module()
		if err != nil {
			t.Fatalf("count %d: %v", tc.count, err)
		}
		if mod.Warmup != tc.want || mod.Tests[0].Warmup != tc.want {
			t.Errorf("count %d: warmup %d, engine's %d; want %d", tc.count, mod.Warmup, mod.Tests[0].Warmup, tc.want)
		}
	}
}

// TestStallTimeout: the engine's stall deadline of every spec, latency
// and bandwidth, is half its module's timeout, as the engine receives it
// (after rdma's defaults), so that a silent peer fails the verbs loop
// before the probe's own timeout ends the probe.
func TestStallTimeout(t *testing.T) {
	c, err := Load("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		module string
		specs  int
		want   time.Duration
	}{
		{"default", 1, 2500 * time.Millisecond},
		{"rc_read", 4, time.Second},
		{"uc_send", 2, 2500 * time.Millisecond},
	} {
		specs := c.Modules[tc.module].Tests
		if len(specs) != tc.specs {
			t.Fatalf("%s: %d specs, want %d", tc.module, len(specs), tc.specs)
		}
		for _, s := range specs {
			if got := time.Duration(s.StallTimeout); got != tc.want {
				t.Errorf("%s %s %d B: stall timeout %v, want %v", tc.module, s.Measure, s.Size, got, tc.want)
			}
		}
	}
}

func TestLoadTargetFile(t *testing.T) {
	ts, err := LoadTargetFile("testdata/targets.d/rack1.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Name: "rack1-n1", Address: "10.1.0.1:18520", Module: "default", DevicePort: 1},
		{Name: "rack1-n2", Address: "rack1-n2.example:18520", Module: "rc_read", Device: "mlx5_1", DevicePort: 2},
	}
	if !reflect.DeepEqual(ts, want) {
		t.Errorf("LoadTargetFile = %+v, want %+v", ts, want)
	}
	c, err := Load("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckTargets(ts); err != nil {
		t.Errorf("CheckTargets: %v", err)
	}
	ts[0].Module = "gone"
	if err, want := c.CheckTargets(ts), `target "rack1-n1": module "gone" is not defined; modules: atomic, default, rc_read, uc_send`; err == nil || err.Error() != want {
		t.Errorf("CheckTargets error = %v, want %q", err, want)
	}
}

func TestLoadTargetFileBad(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"dup", `duplicate target name "a"`},
		{"port", `target "a": address "10.0.0.1" must be host:port (missing port in address)`},
		{"device-port", `target "a": device_port -1 is outside 1..255`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := "testdata/targets-invalid-" + tc.file + ".yml"
			_, err := LoadTargetFile(path)
			if want := "targets file " + path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("LoadTargetFile(%s) error:\n got %v\nwant %s", path, err, want)
			}
		})
	}
}

// FuzzLoad: what parses can run, and what does not is reported in the
// project's words: a shape the decoder refuses was found by the shape
// check first, at its place.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	malformed, _ := filepath.Glob("testdata/malformed/*.yml")
	for _, p := range append(files, malformed...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			checkReported(t, b, err)
			return
		}
		// What loads must run: the load-time check is the only one.
		r, rc := c.Responder, &yamlerr.Collector{}
		if r.check(rc, nil); rc.Err() != nil || r.maxMemory <= 0 {
			t.Errorf("a responder out of its ranges loaded: %+v: %v", c.Responder, rc.Err())
		}
		for name, m := range c.Modules {
			if len(m.Tests) == 0 {
				t.Errorf("module %s loaded with no tests", name)
			}
			for _, s := range m.Tests {
				if _, err := s.Settings().Complete(); err != nil || s.Ready() != nil {
					t.Errorf("module %s loaded but its test fails: %v", name, err)
				}
			}
		}
	})
}

// FuzzParseTargets: whatever a targets file holds, a list that parses
// has unique names, each with an address the prober can dial.
func FuzzParseTargets(f *testing.F) {
	files, _ := filepath.Glob("testdata/targets*.yml")
	more, _ := filepath.Glob("testdata/targets.d/*.yml")
	for _, p := range append(files, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := ParseTargets(b)
		if err != nil {
			checkReported(t, b, err)
			return
		}
		seen := map[string]bool{}
		for _, tg := range ts {
			if seen[tg.Name] {
				t.Errorf("duplicate name %q parsed", tg.Name)
			}
			seen[tg.Name] = true
			if err := checkHostPort(tg.Address, false); err != nil {
				t.Errorf("target %q parsed with a bad address: %v", tg.Name, err)
			}
		}
	})
}

// checkReported fails t when err, from parsing b, is the decoder's own
// report of a value of the wrong shape or an unknown key, which names a
// Go type instead of the key and what to write; or when a placed error
// has no place. The decoder's guard against a billion laughs is its own,
// and allowed.
func checkReported(t *testing.T, b []byte, err error) {
	t.Helper()
	var te *yaml.TypeError
	if errors.As(err, &te) || strings.Contains(err.Error(), "unmarshal") {
		t.Fatalf("%q: the decoder's error reached the reader: %v", b, err)
	}
	var list yamlerr.List
	if !errors.As(err, &list) {
		return
	}
	for i, e := range list {
		last := i == len(list)-1 && strings.HasPrefix(e.Msg, "too many errors")
		if e.Line == 0 && !last && !strings.HasPrefix(e.Msg, "not valid YAML") {
			t.Errorf("%q: error without a place: %v", b, e)
		}
	}
	if len(list) > yamlerr.MaxErrors+1 {
		t.Errorf("%q: %d errors, more than %d and the too-many line", b, len(list), yamlerr.MaxErrors)
	}
}

// TestLoadModuleTLSFiles: a module's TLS files are read at load, relative
// to the config, so a missing CA fails the load (and a reload keeps the
// old config) instead of every probe.
func TestLoadModuleTLSFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rdmarun_exporter.yml")
	if err := os.WriteFile(file, []byte("modules:\n  m: {tls: {ca_file: ca.pem}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file)
	want := fmt.Sprintf(`config %s: module "m": tls: ctrl: TLS CAFile %s does not exist`, file, filepath.Join(dir, "ca.pem"))
	if err == nil || err.Error() != want {
		t.Errorf("missing CA: %v\nwant %s", err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("not PEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("CA without a certificate: %v", err)
	}
}

// TestExampleConfig: the example the README points to loads, and says
// what its comments say.
func TestExampleConfig(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "examples", "rdmarun_exporter.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Modules["with_bandwidth"]
	if m.Bandwidth == nil || m.Bandwidth.TxDepth != 16 || m.Bandwidth.Interval != 5*time.Minute {
		t.Errorf("with_bandwidth: %+v", m.Bandwidth)
	}
	if d := c.Modules["default"]; d.Mode != rdma.ModeEvent || d.QP.RetryCnt != 3 || len(d.Sizes) != 2 {
		t.Errorf("default: %+v", d)
	}
	if len(c.Targets.Static) != 2 || !c.Responder.Enabled {
		t.Errorf("targets %+v, responder %+v", c.Targets, c.Responder)
	}
}

// TestPackagedConfig: the configuration the packages install parses, and
// the responder keys it shows commented out hold the defaults, as its
// comments say: uncommenting them changes nothing.
func TestPackagedConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "packaging", "default", "rdmarun_exporter.yml"))
	if err != nil {
		t.Fatal(err)
	}
	packaged, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !packaged.Responder.Enabled || len(packaged.Targets.Static) != 0 {
		t.Errorf("packaged: responder %+v, targets %+v; want a responder and no targets", packaged.Responder, packaged.Targets)
	}
	_, responder, ok := strings.Cut(string(b), "\nresponder:\n")
	if !ok {
		t.Fatal("no responder section")
	}
	commented := regexp.MustCompile(`(?m)^  # ([a-z_]+: \S+)$`)
	var keys []string
	for _, m := range commented.FindAllStringSubmatch(responder, -1) {
		keys = append(keys, strings.Split(m[1], ":")[0])
	}
	for _, want := range []string{"max_concurrent", "max_memory", "max_qps", "max_test", "max_sessions", "session_idle", "relay"} {
		if !slices.Contains(keys, want) {
			t.Errorf("responder.%s is not shown; shown: %q", want, keys)
		}
	}
	uncommented, err := Parse(commented.ReplaceAll(b, []byte("  $1")))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(uncommented.Responder, packaged.Responder) {
		t.Errorf("uncommenting %q changes the responder:\n got %+v\nwant %+v", keys, uncommented.Responder, packaged.Responder)
	}
}
