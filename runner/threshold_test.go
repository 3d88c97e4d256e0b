package runner

import (
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

func TestCompileThresholdErrors(t *testing.T) {
	for src, want := range map[string]string{
		"":                   "empty condition; write one such as p99 < 5us && errors == 0",
		"p98 < 5us":          `unknown name p98 (did you mean p90 or p99?); known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`,
		"bw_gpbs > 1":        `unknown name bw_gpbs (did you mean bw_gbps?); known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`,
		"latency < 5":        `unknown name latency; known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`,
		"pause_rxus < 1ms":   `unknown name pause_rxus (did you mean pause_rx_us?); known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`,
		"baseline > 1":       `unknown name baseline (the baseline's values are baseline.NAME, such as baseline.p99); known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`,
		"baseline.p98 > 1":   `unknown name baseline.p98 (did you mean baseline.p90 or baseline.p99?); known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`,
		"regressed(p90)":     "regressed(p90): the comparison with the baseline judges p50, p99, p999, bw_gbps or msg_rate, not p90 (did you mean p50 or p99?); write one of them, such as not regressed(p99)",
		"improved(p99, p50)": "improved(...): the comparison with the baseline judges p50, p99, p999, bw_gbps or msg_rate; write one of them, such as not improved(p99)",
		"p99 * 2":            `"p99 * 2" is a number, not true or false; write a comparison such as p99 < 5us`,
		"errors":             `"errors" is a number, not true or false; write a comparison such as p99 < 5us`,
		"mode":               `"mode" is a string, not true or false; write a comparison such as p99 < 5us`,
		"p99 < 5 us":         `unexpected token Identifier("us") in "p99 < 5 us"; write a condition such as p99 < 5us && errors == 0 (durations like 100ns, 5us, 1.5ms, 2s; latencies are in microseconds)`,
		"p99 <":              `unexpected token EOF in "p99 <"; write a condition such as p99 < 5us && errors == 0 (durations like 100ns, 5us, 1.5ms, 2s; latencies are in microseconds)`,
		"counter(1)":         `cannot use int as argument (type string) to call counter  in "counter(1)"; write a condition such as p99 < 5us && errors == 0 (durations like 100ns, 5us, 1.5ms, 2s; latencies are in microseconds)`,
		"mode == 5":          `invalid operation: == (mismatched types string and int) in "mode == 5"; write a condition such as p99 < 5us && errors == 0 (durations like 100ns, 5us, 1.5ms, 2s; latencies are in microseconds)`,
		strings.Repeat("p99 < 1 && ", 100) + "true": "condition is 1104 characters long; at most 1000",
	} {
		_, err := CompileThreshold(src)
		if err == nil || err.Error() != want {
			t.Errorf("CompileThreshold(%q) error\n%v\nwant\n%s", src, err, want)
		}
	}
}

// sample is an Env with a distinct value in every field, so a condition
// reading the wrong one shows.
func sample() Env {
	return Env{
		Min: 1, Max: 90, Mean: 4.5, Stddev: 0.5, P50: 4, P90: 6, P99: 8, P999: 20, P9999: 40,
		OneWayP50: 2, OneWayP99: 4,
		BwGbps: 92.5, BwGiB: 10.77, MsgRate: 1.4e6,
		Errors: 0, Retries: 3,
		Size: 4096, QPs: 4, Mode: "event", Op: "write", LinkGbps: 100,
		Counter: func(name string) (int, error) {
			if name == "rnr_nak_retry_err" {
				return 2, nil
			}
			return 0, &net.AddrError{Err: "no counter", Addr: name}
		},
	}
}

func TestThresholdEval(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
		err  string
	}{
		// Every name, on both sides of its value.
		{src: "min == 1 && min < 1.001us", want: true},
		{src: "max > 89us && max < 91", want: true},
		{src: "mean == 4.5", want: true},
		{src: "stddev == 500ns", want: true},
		{src: "p50 == 4us", want: true},
		{src: "p90 <= 6us", want: true},
		{src: "p99 < 5us", want: false},
		{src: "p99 < 8.001us", want: true},
		{src: "p999 < 0.02ms", want: false},
		{src: "p999 <= 0.02ms", want: true},
		{src: "p9999 < 1s", want: true},
		{src: "one_way_p50 == 2us", want: true},
		{src: "one_way_p99 == p99 / 2", want: true},
		{src: "bw_gbps >= 0.9 * link_gbps", want: true},
		{src: "bw_gbps >= 0.95 * link_gbps", want: false},
		{src: "bw_gib > 10", want: true},
		{src: "msg_rate > 1e6", want: true},
		{src: "errors == 0", want: true},
		{src: "retries == 0", want: false},
		{src: "retries <= 3", want: true},
		{src: "size == 4KiB", want: true},
		{src: "size == 4096 && size < 4.1KB", want: true},
		{src: "qps == 4", want: true},
		{src: `mode == "event"`, want: true},
		{src: `op in ["write", "write_imm"]`, want: true},
		{src: "link_gbps == 100", want: true},
		{src: `counter("rnr_nak_retry_err") == 2`, want: true},
		{src: `counter("nope") == 0`, err: `threshold "counter(\"nope\") == 0": address nope: no counter`},
		// Builtins that do not clash with names still work.
		{src: "abs(p99 - p50) < 5us", want: true},
		{src: `size < 1024 || p99 < 10us`, want: true},
	} {
		th, err := CompileThreshold(tc.src)
		if err != nil {
			if tc.err != "" && strings.HasPrefix(err.Error(), tc.err) {
				continue
			}
			t.Errorf("CompileThreshold(%q): %v", tc.src, err)
			continue
		}
		got, err := th.Eval(sample())
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Eval(%q) error %v, want %q", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Eval(%q) = %v, %v; want %v", tc.src, got, err, tc.want)
		}
		if th.Source() != tc.src {
			t.Errorf("Source() = %q, want %q", th.Source(), tc.src)
		}
	}
}

// A condition on a counter fails with an error, not a pass, when the run
// recorded no counters.
func TestEvalWithoutCounters(t *testing.T) {
	th := MustCompileThreshold(`counter("x") == 0`)
	_, err := th.Eval(Env{})
	if err == nil || !strings.Contains(err.Error(), "recorded no port counters") {
		t.Errorf("error %v", err)
	}
}

func TestThresholdNamesAndValues(t *testing.T) {
	th := MustCompileThreshold(`p99 < 5us && bw_gbps > 0 || mode == "event" && counter("rnr_nak_retry_err") == 0 && counter("nope") == 0 && p99 > 0`)
	if got, want := th.Names(), []string{"p99", "bw_gbps", "mode", "counter"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	got := th.Values(sample())
	want := map[string]float64{"p99": 8, "bw_gbps": 92.5, `counter("rnr_nak_retry_err")`: 2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Values() = %v, want %v", got, want)
	}
	if k, both := th.kind(); !both || k != latencyRun {
		t.Errorf("kind() = %v, %v; want latency and both", k, both)
	}
	if b, _ := th.MarshalText(); string(b) != th.Source() {
		t.Errorf("MarshalText() = %s", b)
	}
	for name, unit := range map[string]string{"p99": "us", "bw_gbps": "Gb/s", "size": "B", "errors": "", "nope": ""} {
		if got := Unit(name); got != unit {
			t.Errorf("Unit(%q) = %q, want %q", name, got, unit)
		}
	}
}

// envNames documents every field of Env, in the struct's order, the
// fields of its Baseline as baseline.NAME. Each of those is a float64
// field of Env too, of the same unit and kind.
func TestEnvNamesMatchStruct(t *testing.T) {
	var fields []string
	typ := reflect.TypeFor[Env]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch {
		case !f.IsExported():
		case f.Type == reflect.TypeFor[BaselineValues]():
			for j := range f.Type.NumField() {
				fields = append(fields, f.Tag.Get("expr")+"."+f.Type.Field(j).Tag.Get("expr"))
			}
		default:
			fields = append(fields, f.Tag.Get("expr"))
		}
	}
	if got := knownNames(); !slices.Equal(got, fields) {
		t.Errorf("envNames %v\nEnv fields %v", got, fields)
	}
	for _, n := range envNames {
		if n.doc == "" {
			t.Errorf("%s has no doc", n.name)
		}
		name, ok := strings.CutPrefix(n.name, "baseline.")
		if !ok {
			continue
		}
		plain, _ := lookupName(name)
		if i, ok := envFields[name]; !ok || typ.Field(i).Type.Kind() != reflect.Float64 {
			t.Errorf("%s: Env has no float64 %s", n.name, name)
		}
		if plain.unit != n.unit || plain.kind != n.kind {
			t.Errorf("%s: unit %q, kind %v; %s has %q, %v", n.name, n.unit, n.kind, name, plain.unit, plain.kind)
		}
	}
}

func FuzzCompileThreshold(f *testing.F) {
	for _, s := range []string{
		"p99 < 5us", "p99 < 5us && errors == 0", "bw_gbps >= 0.9 * link_gbps", `counter("x") == 0`,
		"p50 < 1.5ms || mode == 'event'", "p9999 < 1_000ns", "5us", `"unterminated`, "let x = 1; x > p99",
		"map([1,2], # * 2)[0] == 2", "abs(-1) == 1", "p99 < 1e400us", "0x10 > size",
		"pause_rx == 0", "cnp_sent < 100 || retries > 0", "pause_rx_us < 1ms",
		"not regressed(p99)", `improved("bw_gbps") || p99 < baseline.p99 * 1.1`, "regressed(p90)", "baseline.p9 > 0",
	} {
		f.Add(s)
	}
	mixed := NewEnv(categoryResult(mlx5Side(), rxeSide("rxe1", "veth1")), 100)
	compared := withComparison(sample(), regressedP99())
	f.Fuzz(func(t *testing.T, src string) {
		th, err := CompileThreshold(src)
		if err != nil {
			if th != nil {
				t.Fatal("error and a threshold")
			}
			return
		}
		// What compiles evaluates without panicking on any environment.
		for _, env := range []Env{{}, sample(), mixed, compared} {
			_, _ = th.Eval(env)
			_ = th.Values(env)
		}
	})
}

// TestSetupNames: the set-up names read the CM times of the run's QPs in
// microseconds, nearest rank over the QPs; a run without CM times fails
// the condition rather than reading 0.
func TestSetupNames(t *testing.T) {
	ms := time.Millisecond
	var qps []rdma.CMTimes
	for i := range 100 {
		d := time.Duration(i+1) * 10 * time.Microsecond
		qps = append(qps, rdma.CMTimes{ResolveAddr: d, ResolveRoute: 2 * d, Connect: ms + d})
	}
	res := &rdma.Result{Connect: rdma.NewConnectStats(qps, time.Second, 1)}
	env := NewEnv(res, 0)
	for src, want := range map[string]bool{
		"resolve_addr_p50 == 500us && resolve_addr_p99 == 990us && resolve_addr_max == 1ms": true,
		"resolve_route_p50 == 1ms && resolve_route_max == 2ms":                              true,
		"connect_p50 == 1.5ms && connect_p99 == 1.99ms && connect_max == 2ms":               true,
		"setup_p50 == 3ms && setup_max == 5ms":                                              true,
		"connect_p99 < 1ms":                                                                 false,
	} {
		got, err := MustCompileThreshold(src).Eval(env)
		if err != nil || got != want {
			t.Errorf("Eval(%q) = %v, %v; want %v", src, got, err, want)
		}
	}
	if v := MustCompileThreshold("setup_p99 < 10ms").Values(env); v["setup_p99"] != 4960 {
		t.Errorf("Values = %v, want setup_p99 4960", v)
	}
	th := MustCompileThreshold("connect_p99 < 5ms")
	_, err := th.Eval(NewEnv(&rdma.Result{}, 0))
	if err == nil || !strings.Contains(err.Error(), "connect_p99: this run has no CM set-up times") {
		t.Errorf("a run without CM times: %v", err)
	}
	if v := th.Values(NewEnv(&rdma.Result{}, 0)); len(v) != 0 {
		t.Errorf("Values of a run without CM times = %v, want none", v)
	}
}

// TestDeliveryNames: a UD run's delivery is judged by name; on a run
// without one (not UD) the names are an error, not a zero that passes.
func TestDeliveryNames(t *testing.T) {
	ud := &rdma.Result{
		Spec: rdma.Test{TestSpec: rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, QPType: rdma.UD, Size: 1024, QPs: 1}},
		Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{
			{Delivery: &rdma.Delivery{Sent: 1000, Received: 990, Lost: 10, ReceivedBytesPerSecond: 1.25e8}},
			{Delivery: &rdma.Delivery{Sent: 1000, Received: 1000}},
		}},
	}
	e := NewEnv(ud, 0)
	if e.Sent != 2000 || e.Received != 1990 || e.Lost != 10 || e.LossRatio != 0.005 || e.RxGbps != 1 {
		t.Errorf("NewEnv(UD) = sent %d, received %d, lost %d, ratio %v, rx %v", e.Sent, e.Received, e.Lost, e.LossRatio, e.RxGbps)
	}
	for src, want := range map[string]bool{"lost == 10": true, "loss_ratio < 0.001": false, "received > 1900 && rx_gbps >= 1": true} {
		th, err := CompileThreshold(src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := th.Eval(e); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
	rc := NewEnv(&rdma.Result{Spec: rdma.Test{TestSpec: rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth}}, Bandwidth: &rdma.BandwidthStats{}}, 0)
	th, err := CompileThreshold("lost == 0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.Eval(rc); err == nil || !strings.Contains(err.Error(), "only qp_type ud loses messages") {
		t.Errorf("lost on an RC run: %v, want an error", err)
	}
}
