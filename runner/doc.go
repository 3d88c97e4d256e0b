// Package runner loads rdmarun's scenario files, expands them into runs
// for the verbs engine, and judges each run against its pass conditions.
//
// A scenario is YAML:
//
//	name: roce-sweep
//	device: auto              # or mlx5_0, rxe0
//	port: 1
//	gid_index: auto           # or an index from `rdmarun devices`
//	peer: loopback            # or HOST[:PORT] of `rdmarun serve`
//	peer_device: rxe1         # optional: the responder's device
//	token_file: /etc/rdmarun/token         # remote peers only
//	tls: {ca: ca.pem, cert: c.pem, key: c.key, server_name: host}
//	vars: {iters: 10000, p99_limit: 50us}
//	defaults: {iterations: ${iters}, warmup: 1000, mode: busy_poll, qp_type: rc}
//	cases:
//	  - name: write-latency
//	    op: write               # send, send_imm, write, write_imm, read, fetch_add, cmp_swap
//	    measure: latency        # latency, bandwidth, or both
//	    sizes: [2, 64, 4KiB]
//	    pass: p99 < ${p99_limit} && errors == 0
//	  - name: write-bandwidth
//	    op: write
//	    measure: bandwidth
//	    sizes: {from: 4KiB, to: 8MiB, factor: 2}
//	    qps: [1, 4]
//	    mode: both              # busy_poll and event
//	    duration: 5s
//	    pass: [bw_gbps >= 0.9 * link_gbps, retries == 0]
//	    abort_on_fail: true
//
// A case takes name, description, op, measure, sizes, qps, mode, pass,
// abort_on_fail and every engine setting, a knob: Knobs lists them with
// type, unit, default and help, and is the one place they are declared
// (runner/README.md's table and `rdmarun bench`'s flags come from it).
// Single builds a scenario of one case from flag settings, checked by the
// same rules as a file. defaults: takes the same keys but name,
// description and pass; a case's own value wins. Sizes take units (B,
// KiB, MiB, GiB, KB, MB, GB; a bare number is bytes), durations Go's
// syntax (100ns, 5us, 1.5ms, 2s). sizes, qps, mode and measure take one
// value or a list, and a single value with commas ("2,64,4KiB") is a list.
//
// ${name} in any value is replaced by the variable's value, from vars: or
// from the overrides given to Load (`--set name=value`); an override must
// name a declared variable. Values are substituted as text and then read
// as the key expects, so one variable stands for one value.
//
// Each case expands to measure x size x qps x mode runs, in that order
// (latency before bandwidth), and the engine checks every one at load:
// an impossible combination such as op read on qp_type uc is a load
// error naming the case. Every error is FILE:LINE:COL: KEY: what is
// wrong; what is allowed, and Load reports up to ten at once.
//
// A fleet scenario names hosts: (a list, a hostfile, a DNS name or a Slurm
// node list) instead of peer:, and a pattern: of pairs among them; its
// cases run on every pair (runner/README.md, "Fleet scenarios"). Parse
// plans an inline list's pairs and rounds into Scenario.Fleet without the
// network; Load also finds the hosts of the other sources, bounded by a
// deadline, and places every problem at its line and column.
//
// pass holds expr-lang conditions over Env (see its fields for every name
// and unit), compiled at load: an unknown name is an error, never a
// silent pass. Latencies are in microseconds, and duration literals are
// converted to microseconds, so `p99 < 5us`, `p99 < 5` and `p99 < 5000ns`
// are the same condition; size literals (4KiB, 1MB) are bytes, as size is. A list means every condition must hold. A
// condition reading latency names is judged on latency runs, one reading
// bandwidth names on bandwidth runs, one reading neither on every run;
// one naming what its case does not measure is a load error.
//
// Execute runs a scenario on a Target (Loopback or Remote) and returns a
// report.Report; ExitStatus turns it into rdmarun's exit code from its
// StopReason and counts, never from message text. ExecuteFleet runs a
// scenario that names hosts: on every pair of its fleet, round by round,
// each test through host A's rdmarun serve against host B's (a Relayer,
// peer.RunVia), and fills report.Fleet with the rounds as they ran, the
// matrices and the suspects.
package runner
