package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// TestLoadMalformed: a value of the wrong shape, an unknown or repeated
// key and a syntax error, at every depth of the file, and a responder
// value of the right shape but out of its range, are reported at
// file:line:col under their key path, with what was found and what to
// write, and all of a file's at once. Each testdata/malformed file is a
// case: targetfile-* a targets file, the others a configuration.
func TestLoadMalformed(t *testing.T) {
	cases := []struct{ file, want string }{
		{"bandwidth-duration-number.yml", `bandwidth-duration-number.yml:3:27: modules.m.bandwidth.duration: want a duration such as 5s, not "2"; give it a unit, such as 2s`},
		{"bandwidth-size-list.yml", `bandwidth-size-list.yml:4:13: modules.m.bandwidth.size: want a size such as 1MiB, not a list`},
		{"bandwidth-tx-depth-word.yml", `bandwidth-tx-depth-word.yml:3:27: modules.m.bandwidth.tx_depth: want a whole number, not "deep"`},
		{"bandwidth-unknown-key.yml", `bandwidth-unknown-key.yml:5:7: modules.m.bandwidth: unknown key "intreval"; did you mean "interval"?`},
		{"doctor-enabled-word.yml", `doctor-enabled-word.yml:2:12: doctor.enabled: want true or false, not "yes-please"`},
		{"doctor-interval-number.yml", `doctor-interval-number.yml:2:13: doctor.interval: want a duration such as 5s, not "300"; give it a unit, such as 300s`},
		{"doctor-scalar.yml", `doctor-scalar.yml:1:9: doctor: want a mapping of keys (enabled, interval), not "off"`},
		{"doctor-unknown-key.yml", `doctor-unknown-key.yml:2:3: doctor: unknown key "intervall"; did you mean "interval"?`},
		{"many.yml", `
many.yml:4:5: modules.m: unknown key "sizez"; did you mean "sizes"?
many.yml:5:12: modules.m.count: want a whole number, not "ten"
many.yml:6:23: modules.m.bandwidth.size: want a size such as 1MiB, not a list
many.yml:8:11: targets.static: want a list of targets such as [{name: n1, address: 10.0.0.1:18520, module: default}], not "node-a"
many.yml:10:12: responder.enabled: want true or false, not "maybe"
many.yml:12:11: mesh.labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list
many.yml:13:11: mesh.rotate: want a duration such as 5s, not "3600"; give it a unit, such as 3600s
many.yml:14:1: unknown key "doctr"; did you mean "doctor"?`},
		{"mesh-always-scalar.yml", `mesh-always-scalar.yml:3:11: mesh.always: want a list of selectors such as [{same: [rack]}], not "rack"`},
		{"mesh-budget-list.yml", `mesh-budget-list.yml:2:26: mesh.max_probes_per_second: want a number, not a list`},
		{"mesh-label-value-mapping.yml", `mesh-label-value-mapping.yml:3:11: mesh.labels.rack: want a label value such as r1, not a mapping`},
		{"mesh-labels-block.yml", `mesh-labels-block.yml:7:11: mesh.labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list`},
		{"mesh-labels-list.yml", `mesh-labels-list.yml:7:16: mesh.labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list`},
		{"mesh-match-list.yml", `mesh-match-list.yml:4:14: mesh.always[0].match: want a mapping of label name to value, such as match: {tor: t1}, not a list`},
		{"mesh-max-targets-word.yml", `mesh-max-targets-word.yml:2:16: mesh.max_targets: want a whole number, not "all"`},
		{"mesh-rotate-number.yml", `mesh-rotate-number.yml:3:11: mesh.rotate: want a duration such as 5s, not "3600"; give it a unit, such as 3600s`},
		{"mesh-same-scalar.yml", `mesh-same-scalar.yml:4:13: mesh.always[0].same: want a list of label names such as [rack], not "rack"; for a list of one, write [rack]`},
		{"mesh-unknown-key.yml", `mesh-unknown-key.yml:2:3: mesh: unknown key "max_target"; did you mean "max_targets"?`},
		{"module-count-word.yml", `module-count-word.yml:4:12: modules.m.count: want a whole number, not "ten"`},
		{"module-empty.yml", `module-empty.yml:2:11: modules.default: want a mapping of keys (op, sizes, mode, qp, connect, count, ...), not nothing; write {} for every default`},
		{"module-interval-number.yml", `module-interval-number.yml:3:15: modules.m.interval: want a duration such as 5s, not "15"; give it a unit, such as 15s`},
		{"module-op-list.yml", `module-op-list.yml:3:9: modules.m.op: want an op such as write_imm, not a list`},
		{"module-scalar.yml", `module-scalar.yml:2:12: modules.default: want a mapping of keys (op, sizes, mode, qp, connect, count, ...), not "fast"`},
		{"module-sizes-item.yml", `module-sizes-item.yml:5:9: modules.m.sizes[1]: want a size such as 4KiB, not a mapping`},
		{"module-sizes-scalar.yml", `module-sizes-scalar.yml:3:12: modules.m.sizes: want a list of sizes such as [2, 4KiB], not "4KiB"; for a list of one, write [4KiB]`},
		{"module-tls-bool.yml", `module-tls-bool.yml:3:60: modules.m.tls.insecure_skip_verify: want true or false, not "maybe"`},
		{"module-tls-scalar.yml", `module-tls-scalar.yml:3:10: modules.m.tls: want a mapping of keys (ca_file, cert_file, key_file, server_name, insecure_skip_verify), not "ca.pem"`},
		{"module-unknown-key.yml", `module-unknown-key.yml:4:5: modules.m: unknown key "sizez"; did you mean "sizes"?`},
		{"module-warmup-fraction.yml", `module-warmup-fraction.yml:2:27: modules.m.warmup: want a whole number, not "2.5"`},
		{"modules-list.yml", `modules-list.yml:1:10: modules: want a mapping of module name to its settings, such as modules: {default: {count: 10}}, not a list`},
		{"qp-scalar.yml", `qp-scalar.yml:3:9: modules.m.qp: want a mapping of keys (type, timeout, retry_cnt, rnr_retry, mtu), not "rc"`},
		{"qp-type-list.yml", `qp-type-list.yml:4:13: modules.m.qp.type: want a QP type such as rc, not a list`},
		{"qp-unknown-key.yml", `qp-unknown-key.yml:3:21: modules.m.qp: unknown key "rnr_rety"; did you mean "rnr_retry"?`},
		{"responder-cm-port-word.yml", `responder-cm-port-word.yml:2:12: responder.cm_port: want a whole number, not "cm"`},
		{"responder-enabled-word.yml", `responder-enabled-word.yml:2:12: responder.enabled: want true or false, not "yes please"`},
		{"responder-max-memory-list.yml", `responder-max-memory-list.yml:2:15: responder.max_memory: want a size such as 256MiB, not a list`},
		{"responder-tls-scalar.yml", `responder-tls-scalar.yml:2:8: responder.tls: want a mapping of keys (cert_file, key_file, client_ca_file, relay_ca_file), not "cert.pem"`},
		{"responder-unknown-key.yml", `responder-unknown-key.yml:2:3: responder: unknown key "listen_addr"; allowed here: enabled, listen, cm_port, device, device_port, token_file, tls, allow_unauthenticated, relay, max_concurrent, max_memory, max_qps, max_test, max_sessions, session_idle`},
		{"responder-cm-port-range.yml", `responder-cm-port-range.yml:2:12: responder.cm_port: want a port from 0 to 65535 (0: the CM picks one), or -1 for no rdma_cm listener, not 70000`},
		{"responder-device-port-word.yml", `responder-device-port-word.yml:2:16: responder.device_port: want a whole number, not "first"`},
		{"responder-device-port-zero.yml", `responder-device-port-zero.yml:2:16: responder.device_port: want a port of the device from 1 to 255 (the default is 1), not 0`},
		{"responder-listen-no-port.yml", `responder-listen-no-port.yml:2:11: responder.listen: address "10.0.0.1" must be host:port (missing port in address)`},
		{"responder-many.yml", `
responder-many.yml:3:12: responder.max_qps: want 1 or more QPs per test (the default is 64), not 0
responder-many.yml:4:17: responder.max_sessions: want 0 (keep none) or more sessions (the default is 256), not -2
responder-many.yml:5:17: responder.session_idle: want a positive duration (the default is 5m0s), not -1s
responder-many.yml:6:16: responder.device_port: want a port of the device from 1 to 255 (the default is 1), not 256`},
		{"responder-max-concurrent-zero.yml", `responder-max-concurrent-zero.yml:2:19: responder.max_concurrent: want 1 or more tests at once (the default is 4), not 0`},
		{"responder-max-memory-word.yml", `responder-max-memory-word.yml:2:15: responder.max_memory: size "lots" is not a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)`},
		{"responder-max-memory-zero.yml", `responder-max-memory-zero.yml:2:15: responder.max_memory: want a positive size such as 256MiB (the default is 1GiB), not 0`},
		{"responder-max-qps-negative.yml", `responder-max-qps-negative.yml:2:12: responder.max_qps: want 1 or more QPs per test (the default is 64), not -1`},
		{"responder-max-sessions-negative.yml", `responder-max-sessions-negative.yml:2:17: responder.max_sessions: want 0 (keep none) or more sessions (the default is 256), not -1`},
		{"responder-max-sessions-word.yml", `responder-max-sessions-word.yml:2:17: responder.max_sessions: want a whole number, not "many"`},
		{"responder-max-test-zero.yml", `responder-max-test-zero.yml:2:13: responder.max_test: want a positive duration (the default is 10m0s), not 0s`},
		{"responder-relay-ca-list.yml", `responder-relay-ca-list.yml:3:20: responder.tls.relay_ca_file: want a file path, not a list`},
		{"responder-relay-word.yml", `responder-relay-word.yml:2:10: responder.relay: want true or false, not "sometimes"`},
		{"responder-session-idle-number.yml", `responder-session-idle-number.yml:2:17: responder.session_idle: want a duration such as 5s, not "300"; give it a unit, such as 300s`},
		{"responder-session-idle-zero.yml", `responder-session-idle-zero.yml:2:17: responder.session_idle: want a positive duration (the default is 5m0s), not 0s`},
		{"responder-tls-client-ca-alone.yml", `responder-tls-client-ca-alone.yml:2:8: responder.tls: client_ca_file needs cert_file and key_file: clients are asked for certificates over TLS`},
		{"responder-tls-half.yml", `responder-tls-half.yml:2:8: responder.tls: cert_file and key_file go together: give both, or neither`},
		{"second-document.yml", `second-document.yml:3:1: a second YAML document; the file holds one (remove the ---)`},
		{"syntax-tab.yml", `syntax-tab.yml:2: not valid YAML: found character that cannot start any token; the line is indented with a tab, and YAML indents with spaces only`},
		{"syntax.yml", `syntax.yml:3: not valid YAML: mapping values are not allowed in this context`},
		{"targets-dns-refresh-number.yml", `targets-dns-refresh-number.yml:5:60: targets.dns[0].refresh: want a duration such as 5s, not "30"; give it a unit, such as 30s`},
		{"targetfile-labels.yml", `targetfile-labels.yml:5:11: [1].labels: want a mapping of label name to value, such as labels: {rack: r1}, not "rack"`},
		{"targetfile-mapping.yml", `targetfile-mapping.yml:1:1: want a list of targets, as under targets.static, such as [{name: n1, address: 10.0.0.1:18520, module: default}], not a mapping`},
		{"targetfile-unknown-key.yml", `targetfile-unknown-key.yml:1:13: [0]: unknown key "addr"; allowed here: name, address, module, device, device_port, labels`},
		{"targets-files-scalar.yml", `targets-files-scalar.yml:2:10: targets.files: want a list of file paths such as [targets.d/rack1.yml], not "targets.d/rack1.yml"; for a list of one, write [targets.d/rack1.yml]`},
		{"targets-jitter-word.yml", `targets-jitter-word.yml:2:11: targets.jitter: want a number, not "some"`},
		{"targets-label-value-list.yml", `targets-label-value-list.yml:8:22: targets.static[0].labels.rack: want a label value such as r1, not a list`},
		{"targets-labels-list.yml", `targets-labels-list.yml:8:15: targets.static[0].labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list`},
		{"targets-list.yml", `targets-list.yml:1:10: targets: want a mapping of keys (static, files, dns, max_probes_per_second, jitter, max_per_module, ...), not a list`},
		{"targets-max-per-module-list.yml", `targets-max-per-module-list.yml:2:19: targets.max_per_module: want a whole number, not a list`},
		{"targets-static-item-scalar.yml", `targets-static-item-scalar.yml:5:7: targets.static[0]: want a mapping of keys (name, address, module, device, device_port, labels), not "node-a:18520"`},
		{"targets-static-mapping.yml", `targets-static-mapping.yml:5:5: targets.static: want a list of targets such as [{name: n1, address: 10.0.0.1:18520, module: default}], not a mapping`},
		{"targets-static-port-word.yml", `targets-static-port-word.yml:8:20: targets.static[0].device_port: want a whole number, not "first"`},
		{"targets-static-unknown-key.yml", `targets-static-unknown-key.yml:6:17: targets.static[1]: unknown key "adress"; did you mean "address"?`},
		{"top-key-twice.yml", `top-key-twice.yml:4:1: modules: given twice (first at line 1); keep one`},
		{"top-list.yml", `top-list.yml:1:1: want a mapping of keys (modules, targets, responder, mesh, doctor), not a list`},
		{"top-unknown-key.yml", `top-unknown-key.yml:1:1: unknown key "module"; did you mean "modules"?`},
	}
	files, err := filepath.Glob("testdata/malformed/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/malformed/*.yml: %v", err)
	}
	want := map[string]string{}
	for _, tc := range cases {
		want[tc.file] = tc.want
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("%s has no row in TestLoadMalformed", f)
			}
			delete(want, name)
			var err error
			if strings.HasPrefix(name, "targetfile-") {
				_, err = LoadTargetFile(f)
			} else {
				_, err = Load(f)
			}
			if err == nil {
				t.Fatalf("%s loaded, want %s", f, w)
			}
			if got := strings.ReplaceAll(err.Error(), "testdata/malformed/", ""); got != strings.TrimPrefix(w, "\n") {
				t.Errorf("%s:\n got %s\nwant %s", f, got, strings.TrimPrefix(w, "\n"))
			}
			var list yamlerr.List
			if !errors.As(err, &list) {
				t.Errorf("%s: error %T is not a yamlerr.List", f, err)
			}
		})
	}
	for name := range want {
		t.Errorf("row %s has no file in testdata/malformed", name)
	}
}

// TestParseMalformed: without a file, an error is placed by line and
// column alone.
func TestParseMalformed(t *testing.T) {
	if _, err := Parse([]byte("mesh: {labels: [rack]}\n")); err == nil || err.Error() != "1:16: mesh.labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list" {
		t.Errorf("Parse: %v", err)
	}
	if _, err := ParseTargets([]byte("- {name: a, address: 10.0.0.1:1, module: m, labels: [rack]}\n")); err == nil || err.Error() != "1:53: [0].labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list" {
		t.Errorf("ParseTargets: %v", err)
	}
}
