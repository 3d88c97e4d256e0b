package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/rdma"
)

// overrides are the --set values the tests pass with some files.
var overrides = map[string]map[string]string{
	"remote.yaml": {"size": "256", "limit": "20us"},
}

// expansion is what the golden files hold: the scenario's settings and
// its runs, as one JSON document with a run per line so that a diff shows
// which run changed.
func expansion(t *testing.T, sc *Scenario) []byte {
	t.Helper()
	head := map[string]any{
		"name": sc.Name, "description": sc.Description, "device": sc.Device, "port": sc.Port,
		"gid_index": sc.GIDIndex, "peer": sc.Peer, "peer_device": sc.PeerDevice,
		"token_file": sc.TokenFile, "tls": sc.TLS, "vars": sc.Vars,
	}
	if b := sc.Baseline; b != nil {
		runs := -1 // not read
		if b.Report != nil {
			runs = len(b.Report.Runs)
		}
		head["baseline"] = map[string]any{"file": b.File, "min_effect": b.Options.MinEffect, "confidence": b.Options.Confidence, "runs": runs}
	}
	marshal := func(v any) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	var b bytes.Buffer
	b.WriteString("{\"scenario\": ")
	b.Write(marshal(head))
	if f := sc.Fleet; f != nil {
		b.WriteString(",\n\"fleet\": ")
		b.Write(marshal(map[string]any{
			"source": f.Source.String(), "hosts": f.Hosts, "pattern": f.Pattern, "options": f.Options,
			"parallel": f.Parallel, "confirm": f.Confirm, "lag_factor": f.LagFactor, "pairs": len(f.Pairs),
		}))
		// A round per line, so that a diff shows which round changed.
		b.WriteString(",\n\"rounds\": [")
		for i, r := range f.Rounds {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n")
			b.Write(marshal(r))
		}
		b.WriteString("\n]")
	}
	b.WriteString(",\n\"runs\": [")
	for i, r := range sc.Runs() {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n")
		b.Write(marshal(r))
	}
	b.WriteString("\n]}\n")
	if !json.Valid(b.Bytes()) {
		t.Fatalf("expansion is not JSON:\n%s", b.Bytes())
	}
	return b.Bytes()
}

func TestLoadValid(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid scenarios: %v", err)
	}
	for _, f := range files {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			sc, err := Load(f, overrides[base])
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("valid", strings.TrimSuffix(base, ".yaml")+".runs.json"), expansion(t, sc))
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	for _, tc := range []struct {
		file      string
		overrides map[string]string
		want      string
	}{
		{file: "invalid-unknown-key.yaml", want: `
invalid-unknown-key.yaml:2:1: unknown key "peeer"; did you mean "peer"?
invalid-unknown-key.yaml:7:5: unknown key "itertions"; did you mean "iterations"?`},
		{file: "invalid-bad-unit.yaml", want: `
invalid-bad-unit.yaml:6:16: sizes: "4kib" is not a size; write a number of bytes with an optional unit: B, KiB, MiB, GiB, KB, MB, GB`},
		{file: "invalid-size-range.yaml", want: `
invalid-size-range.yaml:6:12: sizes: from 8MiB is larger than to 4KiB; write from <= to
invalid-size-range.yaml:10:43: factor: 1 would not grow the size; write a number larger than 1, such as 2
invalid-size-range.yaml:14:12: sizes: the range from 1B to 1MiB by 1.1 has more than 64 sizes; raise factor or narrow the range`},
		{file: "invalid-unknown-name.yaml", want: `
invalid-unknown-name.yaml:6:11: pass: unknown name p98 (did you mean p90 or p99?); known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`},
		{file: "invalid-not-boolean.yaml", want: `
invalid-not-boolean.yaml:6:11: pass: "p99 * 2" is a number, not true or false; write a comparison such as p99 < 5us`},
		{file: "invalid-read-uc.yaml", want: `
invalid-read-uc.yaml:5:9: case "read-lat": op read needs a response from the target, and UC has none; use qp_type rc`},
		{file: "invalid-event-write.yaml", want: `
invalid-event-write.yaml:4:9: case "write-lat": op write, measure latency, mode event: an RDMA WRITE makes no completion at its target, so its arrival can only be seen by polling memory; use op write_imm for event mode (at latency, size 2B, qps 1, mode event)`},
		{file: "invalid-undefined-var.yaml", want: `
invalid-undefined-var.yaml:3:24: iterations: undefined variable "itres"; did you mean "iters"?`},
		{file: "invalid-wrong-type.yaml", want: `
invalid-wrong-type.yaml:6:10: qps: "many" is not a whole number; write a QP count from 1 to 4096, or a list such as [1, 4]`},
		{file: "invalid-duplicate-case.yaml", want: `
invalid-duplicate-case.yaml:6:11: name: case "lat" is defined twice (first at line 3); give each case its own name`},
		{file: "invalid-empty-cases.yaml", want: `
invalid-empty-cases.yaml:2:8: cases: empty; a scenario needs at least one case, with name, op and measure`},
		{file: "invalid-mode-typo.yaml", want: `
invalid-mode-typo.yaml:6:11: mode: "busypoll" is not a mode; write busy_poll, event, or both; did you mean "busy_poll"?`},
		{file: "invalid-threshold-kind.yaml", want: `
invalid-threshold-kind.yaml:6:11: pass: p99 is not measured by this case (measure: bandwidth); use bw_gbps, bw_gib or msg_rate, or add measure latency
invalid-threshold-kind.yaml:10:11: pass: one_way_p99: op read is request-response, so only its round trip is measured; use p99
invalid-threshold-kind.yaml:14:11: pass: "p99 < 5us && bw_gbps > 10" reads latency (p99) and bandwidth (bw_gbps), but each run measures one of them; write two conditions in a list
invalid-threshold-kind.yaml:18:11: pass: connect_p99: this case connects by exchange, which has no CM set-up to time; set connect: rdma_cm`},
		{file: "invalid-override.yaml", overrides: map[string]string{"iter": "5"}, want: `
invalid-override.yaml:2:1: vars: override "iter" names no variable of this scenario; did you mean "iters"?`},
		{file: "invalid-baseline-none.yaml", want: `
invalid-baseline-none.yaml:6:12: pass: "not regressed(p99)" compares with a baseline, and this scenario has none; add baseline: FILE (a report of an earlier run, written with --json or --save-baseline), or run it with --baseline FILE
invalid-baseline-none.yaml:6:32: pass: "p99 < baseline.p99 * 1.1" compares with a baseline, and this scenario has none; add baseline: FILE (a report of an earlier run, written with --json or --save-baseline), or run it with --baseline FILE`},
		{file: "invalid-baseline-options.yaml", want: `
invalid-baseline-options.yaml:2:11: baseline.file: missing; write the path of a report of an earlier run of this scenario (written with --json or --save-baseline)
invalid-baseline-options.yaml:2:24: baseline.min_effect: 150% is out of range; write the smallest change that matters, as a percentage (5%) or a fraction (0.05), from 0 up to but not including 100%
invalid-baseline-options.yaml:2:42: baseline.confidence: 0.3 is out of range; write how sure a verdict must be, as a percentage (95%) or a fraction (0.95), from 50% up to but not including 100%
invalid-baseline-options.yaml:2:47: unknown key "effect"; allowed here: file, min_effect, confidence`},
		{file: "invalid-baseline-unused.yaml", want: `
invalid-baseline-unused.yaml:2:1: baseline: no condition reads the baseline; add one to a case's pass:, such as not regressed(p99) or bw_gbps >= baseline.bw_gbps * 0.95, or remove it`},
		{file: "invalid-baseline-names.yaml", want: `
invalid-baseline-names.yaml:7:11: pass: regressed(p90): the comparison with the baseline judges p50, p99, p999, bw_gbps or msg_rate, not p90 (did you mean p50 or p99?); write one of them, such as not regressed(p99)
invalid-baseline-names.yaml:11:11: pass: regressed(p99) is not measured by this case (measure: bandwidth); use bw_gbps, bw_gib or msg_rate, or add measure latency
invalid-baseline-names.yaml:15:11: pass: baseline.one_way_p50: op read is request-response, so only its round trip is measured; use baseline.p50
invalid-baseline-names.yaml:19:11: pass: "p99 < baseline.p99 && not regressed(bw_gbps)" reads latency (p99, baseline.p99) and bandwidth (regressed(bw_gbps)), but each run measures one of them; write two conditions in a list
invalid-baseline-names.yaml:23:11: pass: unknown name baseline.p9 (did you mean baseline.p90 or baseline.p99?); known: min, max, mean, stddev, p50, p90, p99, p999, p9999, one_way_p50, one_way_p99, bw_gbps, bw_gib, msg_rate, errors, retries, size, qps, mode, op, link_gbps, retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us, resolve_addr_p50, resolve_addr_p99, resolve_addr_max, resolve_route_p50, resolve_route_p99, resolve_route_max, connect_p50, connect_p99, connect_max, setup_p50, setup_p99, setup_max, connect_rate, sent, received, lost, loss_ratio, late, rx_gbps, counter("name"), baseline.NAME, regressed(NAME), improved(NAME)`},
		{file: "invalid-syntax.yaml", want: `
invalid-syntax.yaml:4: not valid YAML: mapping values are not allowed in this context`},
		{file: "invalid-many.yaml", want: `
invalid-many.yaml:3:7: port: 0 is out of range; write a port number from 1 to 255
invalid-many.yaml:4:7: peer: port "99999" of "host:99999" is not a port number; write loopback or HOST[:PORT] of rdmarun serve, such as 10.0.0.2:18520
invalid-many.yaml:5:11: vars: variable "x" wants a single value, not a list
invalid-many.yaml:8:9: op: "wirte" is not an op; write send, send_imm, write, write_imm, read, fetch_add or cmp_swap; did you mean "write"?
invalid-many.yaml:10:17: iterations: -5 is out of range; write a whole number of 1 or more
invalid-many.yaml:11:15: duration: "5 sec" is not a duration; write a positive duration with a unit: ns, us, ms, s, m, h (e.g. 5s, 1.5ms)
invalid-many.yaml:12:10: qps: 0 is out of range; write a QP count from 1 to 4096, or a list such as [1, 4]
invalid-many.yaml:13:12: sizes: "0" is not a size a message can have; write 1 B or more
invalid-many.yaml:14:15: tx_depth: "deep" is not a whole number; write a whole number from 1 to 16384
invalid-many.yaml:15:16: hugepages: "yes" is not true or false; write true or false
invalid-many.yaml: too many errors; fix these and check again`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(tc.file, data, tc.overrides)
			want := strings.TrimPrefix(tc.want, "\n")
			if err == nil {
				t.Fatalf("loaded; want\n%s", want)
			}
			if _, ok := err.(ErrorList); !ok {
				t.Errorf("error is a %T, want ErrorList", err)
			}
			if err.Error() != want {
				t.Errorf("got\n%s\nwant\n%s", err, want)
			}
		})
	}
}

// Every invalid file in testdata has its expected message in the table.
func TestInvalidFilesCovered(t *testing.T) {
	src, err := os.ReadFile("load_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	for _, f := range files {
		if !bytes.Contains(src, []byte(`file: "`+filepath.Base(f)+`"`)) {
			t.Errorf("%s has no expected error in TestLoadInvalid", f)
		}
	}
}

// Small documents, each checking one rule of the format.
// TestQPZeros: 0 is a legal retry_cnt, timeout and rnr_retry, and a
// scenario that says 0 gets 0, not the engine's default.
func TestQPZeros(t *testing.T) {
	doc := "cases:\n  - name: c\n    op: write\n    measure: latency\n    retry_cnt: 0\n    timeout: 0\n    rnr_retry: 0\n"
	sc, err := Parse("f.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	q := sc.Runs()[0].Spec.QP
	if q.RetryCnt != 0 || q.Timeout != 0 || q.RNRRetry != 0 {
		t.Errorf("qp attrs %+v, want retry_cnt, timeout and rnr_retry 0", q)
	}
	if d := rdma.DefaultQPAttrs(); q.HopLimit != d.HopLimit || q.MinRNRTimer != d.MinRNRTimer {
		t.Errorf("qp attrs %+v: the settings not given should keep the defaults %+v", q, d)
	}
}

func TestParseRules(t *testing.T) {
	const head = "cases:\n  - name: c\n    op: write\n    measure: bandwidth\n"
	for _, tc := range []struct {
		name, doc string
		overrides map[string]string
		sizes     []int  // of the first case, when it loads
		runs      int    // number of runs, when it loads
		err       string // the whole error, when it does not
	}{
		{name: "range hits to", doc: head + "    sizes: {from: 4KiB, to: 16KiB}\n", sizes: []int{4096, 8192, 16384}, runs: 3},
		{name: "range misses to", doc: head + "    sizes: {from: 1KiB, to: 10KiB, factor: 3}\n", sizes: []int{1024, 3072, 9216}, runs: 3},
		{name: "fractional factor", doc: head + "    sizes: {from: 2, to: 5, factor: 1.2}\n", sizes: []int{2, 3, 4, 5}, runs: 4},
		{name: "single size", doc: head + "    sizes: 8MiB\n", sizes: []int{8 << 20}, runs: 1},
		{name: "no size", doc: head, sizes: []int{0}, runs: 1},
		{name: "comma list from a variable", doc: "vars: {s: 2}\n" + head + "    sizes: ${s}\n", overrides: map[string]string{"s": "2,64, 4KiB"}, sizes: []int{2, 64, 4096}, runs: 3},
		{name: "matrix", doc: head + "    sizes: [2, 4]\n    qps: [1, 2, 4]\n    mode: both\n", sizes: []int{2, 4}, runs: 12},
		{name: "measure both", doc: "cases:\n  - {name: c, op: send, measure: both, sizes: [2, 4]}\n", sizes: []int{2, 4}, runs: 4},
		{name: "defaults give op and measure", doc: "defaults: {op: read, measure: latency}\ncases:\n  - name: c\n", sizes: []int{0}, runs: 1},
		{name: "variable inside text", doc: "vars: {n: 5}\n" + head + "    pass: bw_gbps > ${n}.5\n", sizes: []int{0}, runs: 1},
		{name: "repeat", doc: "repeat: 3\n" + head + "    sizes: [2, 4]\n", sizes: []int{2, 4}, runs: 6},
		{name: "repeat gap", doc: "repeat: 2\nrepeat_gap: 2s\n" + head, sizes: []int{0}, runs: 2},
		{name: "repeat gap zero", doc: "repeat_gap: 0\n" + head, sizes: []int{0}, runs: 1},
		{name: "repeat gap without repeat", doc: "repeat_gap: 2s\n" + head, err: `f.yaml:1:1: repeat_gap: is the pause between passes, and this scenario makes one; add repeat: 2 or more, or drop repeat_gap`},
		{name: "repeat gap not a duration", doc: "repeat: 2\nrepeat_gap: 2\n" + head, err: `f.yaml:2:13: repeat_gap: "2" is not a duration; write the pause between passes as a duration such as 2s (0: none), at most 1h`},
		{name: "repeat gap too long", doc: "repeat: 2\nrepeat_gap: 2h\n" + head, err: `f.yaml:2:13: repeat_gap: 2h is out of range; write the pause between passes as a duration such as 2s (0: none), at most 1h`},
		{name: "repeat gap negative", doc: "repeat: 2\nrepeat_gap: -1s\n" + head, err: `f.yaml:2:13: repeat_gap: -1s is out of range; write the pause between passes as a duration such as 2s (0: none), at most 1h`},
		{name: "repeat zero", doc: "repeat: 0\n" + head, err: `f.yaml:1:9: repeat: 0 is out of range; write how many times to run every case, 1 to 10000`},
		{name: "repeat past the runs bound", doc: "repeat: 5000\n" + head + "    sizes: [2, 4, 8]\n", err: `f.yaml:1:1: repeat: 5000 passes of 3 runs are more than 10000 runs; repeat fewer times, or sweep fewer sizes, QP counts or modes`},
		{name: "empty file", doc: "", err: "f.yaml: the file is empty; a scenario needs at least cases:"},
		{name: "case not a mapping", doc: "cases: [1]\n", err: `f.yaml:1:9: cases: want a mapping of keys (name, description, op, measure, sizes, qps, ...), not "1"`},
		{name: "not a mapping", doc: "- 1\n", err: `f.yaml:1:1: a scenario is a mapping of keys (name, peer, defaults, cases, ...), not a list`},
		{name: "two documents", doc: head + "---\nname: x\n", err: "f.yaml:5:1: a second YAML document; the file holds one (remove the ---)"},
		{name: "no cases", doc: "name: x\n", err: "f.yaml:1:1: cases: missing; a scenario needs a list of cases, each with name, op and measure"},
		{name: "missing op", doc: "cases:\n  - name: c\n    measure: latency\n", err: `f.yaml:2:5: op: missing in case "c"; write send, send_imm, write, write_imm, read, fetch_add or cmp_swap`},
		{name: "missing measure", doc: "cases:\n  - name: c\n    op: read\n", err: `f.yaml:2:5: measure: missing in case "c"; write latency, bandwidth, or both`},
		{name: "duplicate key", doc: head + "    qps: 1\n    qps: 2\n", err: "f.yaml:6:5: qps: given twice (first at line 5); keep one"},
		{name: "unknown key far from any", doc: head + "    zzzzzz: 1\n", err: `f.yaml:5:5: unknown key "zzzzzz"; allowed here: name, description, op, measure, sizes, qps, mode, pass, abort_on_fail, iterations, duration, warmup, threads, cpus, tx_depth, rx_depth, srq, srq_depth, cq_moderation, post_list, inline, bidirectional, hugepages, validate, seed, stall_timeout, loss_timeout, qp_type, multicast, receivers, connect, connect_parallel, mtu, timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, sl, traffic_class, hop_limit`},
		{name: "pass in defaults", doc: "defaults: {pass: errors == 0}\n" + head, err: `f.yaml:1:12: unknown key "pass"; allowed here: op, measure, sizes, qps, mode, abort_on_fail, iterations, duration, warmup, threads, cpus, tx_depth, rx_depth, srq, srq_depth, cq_moderation, post_list, inline, bidirectional, hugepages, validate, seed, stall_timeout, loss_timeout, qp_type, multicast, receivers, connect, connect_parallel, mtu, timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, sl, traffic_class, hop_limit`},
		{name: "size too large", doc: head + "    sizes: 2GiB\n", err: `f.yaml:5:12: sizes: "2GiB" is larger than 1GiB, the largest message a test sends; write 1 B to 1 GiB`},
		{name: "size listed twice", doc: head + "    sizes: [64, 64B]\n", err: `f.yaml:5:17: sizes: 64B is listed twice; list each size once`},
		{name: "range missing to", doc: head + "    sizes: {from: 1}\n", err: `f.yaml:5:12: sizes: range without to; write {from: 4KiB, to: 8MiB, factor: 2}`},
		{name: "range key typo", doc: head + "    sizes: {from: 1, too: 2}\n", err: "f.yaml:5:12: sizes: range without to; write {from: 4KiB, to: 8MiB, factor: 2}\nf.yaml:5:22: unknown key \"too\"; did you mean \"to\"?"},
		{name: "retry_cnt above 7", doc: head + "    retry_cnt: 8\n", err: "f.yaml:5:16: retry_cnt: 8 is out of range; write a whole number from 0 to 7 (default 6; soft-RoCE retries 7 forever)"},
		{name: "bad mtu", doc: head + "    mtu: 1500\n", err: `f.yaml:5:10: mtu: "1500" is not a path MTU; write 256, 512, 1024, 2048 or 4096 (omit it for the port's active MTU)`},
		{name: "ud write", doc: head + "    qp_type: ud\n", err: `f.yaml:3:9: case "c": op write needs a connection to the target's memory, and UD has none (it sends datagrams to a receive queue); use op send or send_imm, or qp_type rc`},
		{name: "ud above mtu", doc: "cases:\n  - {name: c, op: send, measure: bandwidth, qp_type: ud, sizes: 8KiB}\n", err: `f.yaml:2:19: case "c": size 8192 bytes: a UD message is one packet, at most the path MTU, and no port's MTU is above 4096 bytes; use a size of at most 4096 (the path MTU: qp_attrs.mtu_bytes, or the smaller of both ports' active MTU)`},
		{name: "ud above given mtu", doc: "cases:\n  - {name: c, op: send_imm, measure: latency, qp_type: ud, mtu: 1024, sizes: 2KiB}\n", err: `f.yaml:2:19: case "c": size 2048 bytes is above the path MTU 1024 bytes (qp_attrs.mtu_bytes): a UD message is one packet; use a size of at most 1024`},
		{name: "multicast on rc", doc: "peer: h2\ncases:\n  - {name: c, op: send, measure: bandwidth, multicast: 239.1.1.1}\n", err: `f.yaml:3:19: case "c": multicast sends datagrams to a group, which only UD QPs can; add qp_type: ud (not rc)`},
		{name: "multicast write", doc: "peer: h2\ncases:\n  - {name: c, op: write, measure: bandwidth, qp_type: ud, multicast: auto}\n", err: `f.yaml:3:19: case "c": multicast sends to a group's receive queues; use op send, not write`},
		{name: "multicast not a group", doc: "peer: h2\ncases:\n  - {name: c, op: send, measure: bandwidth, qp_type: ud, multicast: 10.0.0.9}\n", err: `f.yaml:3:69: multicast: "10.0.0.9" is not a multicast address; write a multicast address such as 239.1.1.1, or auto`},
		{name: "multicast qps", doc: "peer: h2\ncases:\n  - {name: c, op: send, measure: bandwidth, qp_type: ud, multicast: auto, qps: 4}\n", err: `f.yaml:3:19: case "c": multicast sends from one QP (qps 4, threads 1); use qps 1`},
		{name: "receivers without multicast", doc: "peer: h2\ncases:\n  - {name: c, op: send, measure: bandwidth, qp_type: ud, receivers: [h3]}\n", err: `f.yaml:3:19: case "c": receivers are the responders of a multicast test; add multicast: (a group, or auto), or drop receivers`},
		{name: "receivers in loopback", doc: "cases:\n  - name: c\n    op: send\n    measure: bandwidth\n    qp_type: ud\n    multicast: auto\n    receivers: [h3]\n", err: `f.yaml:7:5: receivers: name remote responders; with peer: loopback the one receiver is peer_device, in this process; use peer: HOST to send to responders`},
		{name: "receivers not an address", doc: "peer: h2\ncases:\n  - {name: c, op: send, measure: bandwidth, qp_type: ud, multicast: auto, receivers: [\"h3/24\"]}\n", err: `f.yaml:3:87: receivers: "h3/24" is not an address; write HOST[:PORT] of rdmarun serve, such as 10.0.0.2:18520`},
		{name: "multicast in a fleet", doc: "hosts: [h1, h2, h3]\ncases:\n  - name: c\n    op: send\n    measure: bandwidth\n    qp_type: ud\n    multicast: auto\n", err: `f.yaml:7:5: multicast: a fleet's multicast cases (one sender, every other host receiving) are not built yet; run it with peer: and receivers: instead of hosts:`},
		{name: "ud over rdma_cm", doc: "cases:\n  - {name: c, op: send, measure: latency, qp_type: ud, connect: rdma_cm}\n", err: `f.yaml:2:19: case "c": qp_type ud with connect: rdma_cm (an RDMA_PS_UDP id) is not built yet; use connect: exchange, which builds the address handles from the exchanged GIDs`},
		{name: "srq with write", doc: head + "    srq: true\n", err: `f.yaml:3:9: case "c": srq shares receive queues, and op write consumes no receives; use send, send_imm or write_imm, or drop srq`},
		{name: "lost on rc", doc: head + "    pass: lost == 0\n", err: `f.yaml:5:11: pass: lost: this case runs qp_type rc, which loses no message without an error, so it counts no delivery; it applies to qp_type ud`},
		{name: "qp_type typo", doc: head + "    qp_type: rcc\n", err: `f.yaml:5:14: qp_type: "rcc" is not a QP type; write rc, uc or ud; did you mean "rc"?`},
		{name: "threads above qps", doc: head + "    qps: [1, 4]\n    threads: 2\n", err: `f.yaml:3:9: case "c": threads 2: want 1..qps (1); each thread drives at least one QP (at bandwidth, size 64KiB, qps 1, mode busy_poll)`},
		{name: "atomic size", doc: "cases:\n  - {name: c, op: cmp_swap, measure: latency, sizes: 16}\n", err: `f.yaml:2:19: case "c": op cmp_swap works on one 8-byte word; size must be 8, not 16`},
		{name: "baseline in a fleet", doc: "hosts: [h1, h2]\nbaseline: b.json\n" + head + "    pass: not regressed(bw_gbps)\n",
			err: "f.yaml:2:1: baseline: a fleet's runs are not judged against a baseline; compare a fleet's reports with rdmarun compare BASE.json NEW.json"},
		{name: "baseline empty", doc: "baseline:\n" + head + "    pass: not regressed(bw_gbps)\n",
			err: "f.yaml:1:10: baseline: want a single value, not nothing; write the path of a report of an earlier run of this scenario (written with --json or --save-baseline), or a mapping {file, min_effect, confidence}"},
		{name: "baseline min_effect not a number", doc: "baseline: {file: b.json, min_effect: lots}\n" + head + "    pass: not regressed(bw_gbps)\n",
			err: `f.yaml:1:38: baseline.min_effect: "lots" is not a percentage or a fraction; write the smallest change that matters, as a percentage (5%) or a fraction (0.05), from 0 up to but not including 100%`},
		{name: "baseline options", doc: "vars: {effect: 2%}\nbaseline: {file: b.json, min_effect: \"${effect}\", confidence: 99%}\n" + head + "    pass: not regressed(bw_gbps)\n", sizes: []int{0}, runs: 1},
		{name: "token with loopback", doc: "token_file: /t\n" + head, err: "f.yaml:1:1: token_file: applies to a remote peer only; with peer: loopback both ends are in this process"},
		{name: "tls half", doc: "peer: h\ntls: {cert: c.pem}\n" + head, err: "f.yaml:2:6: tls: cert and key go together; give both, or neither"},
		{name: "bad peer", doc: "peer: a b\n" + head, err: `f.yaml:1:7: peer: "a b" is not an address; write loopback or HOST[:PORT] of rdmarun serve, such as 10.0.0.2:18520`},
		{name: "unclosed variable", doc: head + "    iterations: ${n\n", err: `f.yaml:5:17: iterations: "${n" has ${ without a closing }; write ${name}`},
		{name: "no vars declared", doc: head + "    iterations: ${n}\n", err: `f.yaml:5:17: iterations: undefined variable "n"; declare it under vars: (or override it)`},
		{name: "override without vars", doc: head, overrides: map[string]string{"n": "1"}, err: `f.yaml:1:1: vars: override "n" names no variable of this scenario; it declares none (add it under vars:)`},
		{name: "bad variable name", doc: "vars: {1x: 2}\n" + head, err: `f.yaml:1:8: vars: "1x" is not a variable name; use letters, digits and _, not starting with a digit`},
		{name: "iterations and duration", doc: head + "    iterations: 5\n    duration: 1s\n", err: "f.yaml:6:5: duration: given with iterations (line 5); a run is bounded by one of them"},
		{name: "empty pass list", doc: head + "    pass: []\n", err: "f.yaml:5:11: pass: empty list; write a condition such as p99 < 5us && errors == 0, or a list of them"},
		{name: "too many runs", doc: head + "    sizes: {from: 1, to: 1GiB, factor: 1.4}\n    qps: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127,128,129,130,131,132,133,134,135,136,137,138,139,140,141,142,143,144,145,146,147,148,149,150,151,152,153,154,155,156,157,158,159,160,161,162,163,164,165,166,167,168,169,170,171,172,173,174,175,176,177,178,179,180,181,182,183,184,185,186,187,188,189,190,191,192,193,194,195,196,197,198,199,200]\n    mode: both\n", err: "f.yaml:1:1: cases: the scenario expands to more than 10000 runs; split it, or sweep fewer sizes, QP counts or modes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseWant(t, tc.doc, tc.overrides, tc.err)
			if sc == nil {
				return
			}
			if got := sc.Cases[0].Sizes; !equal(got, tc.sizes) {
				t.Errorf("sizes %v, want %v", got, tc.sizes)
			}
			if got := len(sc.Runs()); got != tc.runs {
				t.Errorf("%d runs, want %d", got, tc.runs)
			}
		})
	}
}

// parseWant parses doc as f.yaml. With wantErr set the whole error must
// read wantErr, and it returns nil; without, doc must load.
func parseWant(t *testing.T, doc string, overrides map[string]string, wantErr string) *Scenario {
	t.Helper()
	sc, err := Parse("f.yaml", []byte(doc), overrides)
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("got error\n%v\nwant\n%s", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Runs are numbered through the whole scenario, and a caller changing the
// returned list does not change the scenario.
func TestRunsIndexAndCopy(t *testing.T) {
	sc, err := Load("testdata/valid/roce-sweep.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := sc.Runs()
	for i, r := range runs {
		if r.Index != i {
			t.Errorf("run %d has index %d", i, r.Index)
		}
	}
	runs[0].Case = "changed"
	if sc.Runs()[0].Case == "changed" {
		t.Error("Runs returned the scenario's own slice")
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load("testdata/no-such-file.yaml", nil); !os.IsNotExist(err) {
		t.Errorf("error %v, want not-exist", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("testdata/valid/*.yaml")
	fleets, _ := filepath.Glob("testdata/fleet/*.yaml")
	for _, file := range slices.Concat(files, more, fleets) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "5")
	}
	f.Add([]byte("a: &a [*a]\ncases: [*a]\n"), "")
	f.Add([]byte("vars: {m: both}\ncases:\n  - {name: x, op: send, measure: [latency, ${m}], mode: [event, both]}\n"), "")
	f.Add([]byte("vars: {iters: 1}\ncases:\n  - {name: x, op: write, measure: both, sizes: ${iters}}\n"), "1,2,3")
	f.Add([]byte("vars: {iters: a}\nhosts: ${iters}\npattern: pairs\npairs: [[a, b]]\ncases: [{name: x, op: write, measure: latency}]\n"), "a,b,c")
	f.Add([]byte("hosts: [a, {name: b, devices: [x, y]}, '[fd00::1]:1']\ndevices: x,y\npattern: rail\nparallel: 1\ncases: [{name: x, op: write, measure: bandwidth}]\n"), "")
	f.Add([]byte("hosts: {dns: _s._tcp.example}\nconfirm: 3\nlag_factor: 1.5\ncases: [{name: x, op: read, measure: latency}]\n"), "")
	// A fleet of a thousand hosts is a few kilobytes of input but seconds
	// of planning; small fleets reach every rule, big ones only the cap.
	defer func(old int64) { maxFleetPairs = old }(maxFleetPairs)
	maxFleetPairs = 2000
	f.Fuzz(func(t *testing.T, data []byte, iters string) {
		sc, err := Parse("fuzz.yaml", data, map[string]string{})
		if err != nil {
			var list ErrorList
			if l, ok := err.(ErrorList); !ok || len(l) == 0 {
				t.Fatalf("error %T %v is not a non-empty ErrorList", err, err)
			} else {
				list = l
			}
			if len(list) > yamlerr.MaxErrors+1 {
				t.Fatalf("%d errors; at most %d and the too-many line", len(list), yamlerr.MaxErrors)
			}
			return
		}
		if err := checkFleetPlan(sc); err != nil {
			t.Fatal(err)
		}
		// What loads expands to runs the engine accepts.
		for _, r := range sc.Runs() {
			if _, err := r.Spec.Settings().Complete(); err != nil || r.Spec.Ready() != nil {
				t.Fatalf("run %d loaded but the engine refuses it: %v", r.Index, err)
			}
		}
		_, _ = Parse("fuzz.yaml", data, map[string]string{"iters": iters})
	})
}

// knobs.yaml gives every engine setting, so its golden file shows each
// one reaching the spec.
func TestKnobsFileSetsEveryKnob(t *testing.T) {
	data, err := os.ReadFile("testdata/valid/knobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range knobKeys() {
		if !bytes.Contains(data, []byte("  "+k+":")) {
			t.Errorf("knobs.yaml does not set %s", k)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct {
		in    string
		known []string
		quote bool
		want  string
	}{
		{"peeer", topKeys, true, `did you mean "peer"?`},
		{"itertions", caseKeys, true, `did you mean "iterations"?`},
		{"qsp", caseKeys, true, `did you mean "qps"?`}, // a transposition is one edit
		{"Peer", topKeys, true, `did you mean "peer"?`},
		{"p98", knownNames(), false, "did you mean p90 or p99?"},
		{"zzzz", topKeys, true, ""},
	} {
		if got := yamlerr.DidYouMean(tc.in, tc.known, tc.quote); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRepeatInterleaves: repeat: makes whole passes over the cases, so
// case a's repeats alternate with case b's rather than running back to
// back, and each run knows its pass.
func TestRepeatInterleaves(t *testing.T) {
	sc, err := Parse("f.yaml", []byte("repeat: 2\ncases:\n  - {name: a, op: write, measure: latency}\n  - {name: b, op: read, measure: latency}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, r := range sc.Runs() {
		if r.Index != i {
			t.Errorf("run %d has index %d", i, r.Index)
		}
		got = append(got, fmt.Sprintf("%s/%d", r.Case, r.Repeat))
	}
	if want := "a/1 b/1 a/2 b/2"; strings.Join(got, " ") != want {
		t.Errorf("runs %s, want %s", strings.Join(got, " "), want)
	}
}
