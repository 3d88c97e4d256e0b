// Command compare runs perftest's tools and rdmarun on the same devices,
// sizes and iteration counts, interleaved (perftest, rdmarun, rdmarun,
// perftest, ...) so that drift in a noisy emulated VM hits both alike,
// and prints them side by side. Both run as two processes: perftest's
// server and client, and `rdmarun serve` with `rdmarun bench --peer`.
// It runs inside the testbed VM: make compare.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/internal/perftest"
	baseline "github.com/rdmarun/rdmarun/runner/compare"
)

type options struct {
	tokenFile  string // the responder's token, made by rdmarun token for this run
	rdmarun    string
	rdmarunB   string // a second build, interleaved with the first; "" for none
	latIters   int
	bwIters    int
	pairs      int
	serverDev  string
	clientDev  string
	gidIndex   int
	serverAddr string
	only       string
	timeout    time.Duration
	pin        bool
	siw        bool
	// cmSource is cmsource.so, preloaded into perftest's -R clients so
	// they resolve from the client device's address; "" for none.
	cmSource string
}

// test is one perftest tool run and the rdmarun run that measures the same.
type test struct {
	name      string   // as printed
	tool      string   // perftest binary
	args      []string // perftest arguments for both sides
	bench     []string // rdmarun bench arguments
	bandwidth bool
	// msgRate compares messages per second: a bandwidth run of small
	// messages, where the cost per operation shows.
	msgRate bool
	size    int  // message size of a msgRate test, in bytes
	rtt     bool // perftest reports the round trip (read, atomics), not half of it
	// pinned runs both tools' servers on serverCPU and clients on
	// clientCPU, the whole process (rdmarun's Go runtime threads too).
	pinned bool
	// cm connects through rdma_cm: perftest -R, rdmarun --connect
	// rdma_cm. siw runs it on the soft-iWARP pair instead of rxe.
	cm, siw bool
}

// The soft-iWARP pair of a TESTBED_SIW=1 testbed, which --siw compares
// on: the client siw1, the server siw0 on iwveth0.
const siwServer, siwClient, siwServerAddr = "siw0", "siw1", "10.0.1.1"

// devices are the test's client and server devices and the server's
// address.
func (t test) devices(o options) (client, server, addr string) {
	if t.siw {
		return siwClient, siwServer, siwServerAddr
	}
	return o.clientDev, o.serverDev, o.serverAddr
}

// The CPUs of pinned runs: two, as the testbed VM has.
const serverCPU, clientCPU = "1", "0"

// build is one rdmarun binary under comparison and its two responders:
// unpinned, and pinned to serverCPU for pinned runs.
type build struct {
	label                  string // as printed in the tool column
	path                   string
	servePort, pinnedPort  string
	siwPort, siwPinnedPort string // its responders on siw0, with --siw
}

// builds are the rdmarun binaries of a run: --rdmarun, and --rdmarun-b
// when given, each with responders on ports of its own.
func builds(o options) []build {
	b := []build{{label: "rdmarun", path: o.rdmarun, servePort: "18520", pinnedPort: "18521", siwPort: "18524", siwPinnedPort: "18526"}}
	if o.rdmarunB != "" {
		b = append(b, build{label: "rdmarun B", path: o.rdmarunB, servePort: "18522", pinnedPort: "18523", siwPort: "18525", siwPinnedPort: "18527"})
	}
	return b
}

func tests(o options) []test {
	lat, bw := strconv.Itoa(o.latIters), strconv.Itoa(o.bwIters)
	latency := []test{
		{name: "write lat 2B", tool: "ib_write_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "write", "--sizes", "2", "--iters", lat}},
		{name: "read lat 2B", tool: "ib_read_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "read", "--sizes", "2", "--iters", lat}, rtt: true},
		{name: "send lat 2B", tool: "ib_send_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "send", "--sizes", "2", "--iters", lat}},
		{name: "atomic lat 8B", tool: "ib_atomic_lat", args: []string{"-n", lat}, bench: []string{"--op", "fetch_add", "--iters", lat}, rtt: true},
	}
	var out []test
	// Pinned first: pinning is what makes latency comparable on two
	// CPUs, so those rows are the ones to read; the unpinned ones stay for
	// what a user who pins nothing sees.
	if o.pin {
		for _, t := range latency {
			t.name += " pinned"
			t.pinned = true
			out = append(out, t)
		}
	}
	out = append(out, latency...)
	// Reads may have 16 outstanding on both tools: perftest defaults to
	// the device's maximum, rdmarun to 1.
	out = append(out,
		test{name: "write bw 64KiB", tool: "ib_write_bw", args: []string{"-s", "65536", "-n", bw}, bench: []string{"--op", "write", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw}, bandwidth: true},
		test{name: "write bw 64KiB 4 QPs", tool: "ib_write_bw", args: []string{"-s", "65536", "-n", bw, "-q", "4"}, bench: []string{"--op", "write", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw, "--qps", "4"}, bandwidth: true},
		test{name: "read bw 64KiB", tool: "ib_read_bw", args: []string{"-s", "65536", "-n", bw, "-o", "16"}, bench: []string{"--op", "read", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw, "--max-rd-atomic", "16"}, bandwidth: true},
		test{name: "send bw 64KiB", tool: "ib_send_bw", args: []string{"-s", "65536", "-n", bw}, bench: []string{"--op", "send", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw}, bandwidth: true},
	)
	// The same through rdma_cm, as applications connect: set-up is
	// outside both tools' measured loops, so these rows differ from the
	// ones above only if a CM-connected QP runs differently. Over siw,
	// the ops iWARP has (no atomics, no immediate data).
	cm := []test{
		{name: "write lat 2B cm", tool: "ib_write_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "write", "--sizes", "2", "--iters", lat}},
		{name: "send lat 2B cm", tool: "ib_send_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "send", "--sizes", "2", "--iters", lat}},
		{name: "write bw 64KiB cm", tool: "ib_write_bw", args: []string{"-s", "65536", "-n", bw}, bench: []string{"--op", "write", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw}, bandwidth: true},
		{name: "read bw 64KiB cm", tool: "ib_read_bw", args: []string{"-s", "65536", "-n", bw, "-o", "16"}, bench: []string{"--op", "read", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw, "--max-rd-atomic", "16"}, bandwidth: true},
	}
	// The CM's latency rows are pinned as the ones above are (with
	// --pin): unpinned, where the scheduler puts a busy-polling client
	// beside its server decides the latency more than the tool does.
	for i := range cm {
		if o.pin && !cm[i].bandwidth {
			cm[i].pinned = true
			cm[i].name += " pinned"
		}
	}
	for _, t := range cm {
		t.cm = true
		t.args = append(slices.Clone(t.args), "-R")
		t.bench = append(slices.Clone(t.bench), "--connect", "rdma_cm")
		out = append(out, t)
	}
	if o.siw {
		for _, t := range cm {
			t.cm, t.siw = true, true
			t.name = strings.Replace(t.name, " cm", " siw", 1)
			t.args = append(slices.Clone(t.args), "-R")
			t.bench = append(slices.Clone(t.bench), "--connect", "rdma_cm")
			out = append(out, t)
		}
	}
	// UD: one packet per message, so the bandwidth row's size is rxe's
	// MTU (1024 on a 1500-byte veth), the largest a UD send carries.
	ud := []test{
		{name: "send lat 2B UD", tool: "ib_send_lat", args: []string{"-c", "UD", "-s", "2", "-n", lat}, bench: []string{"--op", "send", "--qp-type", "ud", "--sizes", "2", "--iters", lat}},
		{name: "send bw 1KiB UD", tool: "ib_send_bw", args: []string{"-c", "UD", "-s", "1024", "-n", bw}, bench: []string{"--op", "send", "--qp-type", "ud", "--measure", "bandwidth", "--sizes", "1KiB", "--iters", bw}, bandwidth: true},
	}
	// A shared receive queue per side (perftest --use-srq, its rx_depth
	// the queue's depth on both tools: 512).
	ud = append(ud, test{name: "send bw 64KiB 4 QPs srq", tool: "ib_send_bw", args: []string{"-s", "65536", "-n", bw, "-q", "4", "--use-srq"},
		bench: []string{"--op", "send", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw, "--qps", "4", "--srq"}, bandwidth: true})
	for _, t := range ud {
		if o.pin && !t.bandwidth {
			t.pinned = true
			t.name += " pinned"
		}
		out = append(out, t)
	}
	// Message rate: the same window (128 WRs), completion moderation
	// (every 100th send signalled) and post list (one WR per post, both
	// tools' default) on both sides, written out so a change of either
	// tool's defaults cannot skew the rows.
	for _, op := range []string{"write", "send"} {
		for _, size := range []int{2, 64} {
			n := strconv.Itoa(size)
			out = append(out, test{
				name: fmt.Sprintf("%s rate %dB", op, size), tool: "ib_" + op + "_bw",
				args:      []string{"-s", n, "-n", bw, "-t", "128", "-Q", "100", "-l", "1"},
				bench:     []string{"--op", op, "--measure", "bandwidth", "--sizes", n, "--iters", bw, "--tx-depth", "128", "--cq-moderation", "100"},
				bandwidth: true, msgRate: true, size: size,
			})
		}
	}
	return out
}

// sample is one run: latency in microseconds, or bandwidth in bytes/s
// and messages per second.
type sample struct {
	min, median, p99, p999, bytesPerSec, msgsPerSec float64
	link                                            linkCheck // what the client sent on its netdev meanwhile
}

func main() { os.Exit(run()) }

func run() int {
	var o options
	flag.StringVar(&o.rdmarun, "rdmarun", "rdmarun", "path of the rdmarun binary")
	flag.StringVar(&o.rdmarunB, "rdmarun-b", "", "path of a second rdmarun build, run interleaved with the first (A/B of a change to rdmarun itself)")
	flag.IntVar(&o.latIters, "lat-iters", 1000, "iterations of each latency run, for both tools")
	flag.IntVar(&o.bwIters, "bw-iters", 1000, "messages per QP of each bandwidth run, for both tools")
	flag.IntVar(&o.pairs, "pairs", 5, "interleaved runs of each tool per test")
	flag.StringVar(&o.serverDev, "server-device", "rxe0", "device of the answering side")
	flag.StringVar(&o.clientDev, "client-device", "rxe1", "device of the measuring side")
	flag.IntVar(&o.gidIndex, "gid-index", 1, "GID index on both devices")
	flag.StringVar(&o.serverAddr, "server-addr", "10.0.0.1", "IP address of the server device's netdev")
	flag.StringVar(&o.only, "only", "", "run only the tests whose name contains this")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "deadline of each tool run")
	flag.BoolVar(&o.pin, "pin", true, "also run the latency tests with both tools pinned alike: servers on CPU "+serverCPU+", clients on CPU "+clientCPU)
	flag.StringVar(&o.cmSource, "cm-source", "", "cmsource.so (testbed/cmsource/cmsource.c), preloaded into perftest's -R clients so their QPs bind to the -d device's address, as rdmarun's do; without it perftest 4.5-0.17's stay on the server's device")
	flag.BoolVar(&o.siw, "siw", false, "also compare through rdma_cm on soft-iWARP, "+siwClient+" -> "+siwServer+" (a testbed with TESTBED_SIW=1)")
	flag.Parse()
	if err := compare(os.Stdout, o); err != nil {
		fmt.Fprintf(os.Stderr, "compare: %v\n", err)
		return 1
	}
	return 0
}

func compare(w io.Writer, o options) error {
	// A responder on a network address needs a token; the handshake that
	// proves it happens before the measured loops.
	dir, err := os.MkdirTemp("", "compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.tokenFile = filepath.Join(dir, "token")
	if out, err := exec.Command(o.rdmarun, "token", o.tokenFile).CombinedOutput(); err != nil {
		return fmt.Errorf("rdmarun token: %w: %s", err, out)
	}
	for _, b := range builds(o) {
		serves := []responder{{port: b.servePort, device: o.serverDev, gidIndex: o.gidIndex}}
		if o.pin {
			serves = append(serves, responder{port: b.pinnedPort, device: o.serverDev, gidIndex: o.gidIndex, pin: true})
		}
		if o.siw {
			serves = append(serves, responder{port: b.siwPort, device: siwServer, gidIndex: -1})
			if o.pin {
				serves = append(serves, responder{port: b.siwPinnedPort, device: siwServer, gidIndex: -1, pin: true})
			}
		}
		for _, sv := range serves {
			serve, err := startServe(o, b.path, sv)
			if err != nil {
				return err
			}
			defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
		}
	}

	fmt.Fprintf(w, "perftest vs rdmarun, %s -> %s (GID index %d), RC (UD where a row says so), busy-poll, no inline data (perftest does not use inline on rxe), two processes each.\n", o.clientDev, o.serverDev, o.gidIndex)
	fmt.Fprintf(w, "%d interleaved runs per tool and test; each cell is the median over runs, the spread the lowest and highest per-run median or average.\n", o.pairs)
	fmt.Fprintf(w, "The ratio's 95%% interval comes from the runs' spread (Welch's t on the logarithms of the per-run values, as rdmarun compare does); \"no difference\" when it holds 1.\n")
	fmt.Fprintf(w, "Latency in microseconds: one-way (RTT/2) for write and send, round trip for read and atomics, as perftest reports them.\n")
	fmt.Fprintf(w, "\"pinned\": both tools' servers on CPU %s and clients on CPU %s (taskset, whole processes); the other rows are unpinned.\n", serverCPU, clientCPU)
	fmt.Fprintf(w, "Bandwidth from first post to last completion, in Gb/s (10^9 bit/s); perftest's MB/sec is MiB/s and is converted.\n")
	fmt.Fprintf(w, "Message rate (\"rate\" rows) in millions of messages per second, 128 WRs in flight, every 100th signalled, one WR per post, on both tools.\n")
	fmt.Fprintf(w, "\"cm\" rows connect through rdma_cm (perftest -R, rdmarun --connect rdma_cm) on the same devices; \"siw\" rows do so on %s -> %s (soft-iWARP).\n", siwClient, siwServer)
	if o.cmSource != "" {
		fmt.Fprintf(w, "perftest's -R clients run with %s preloaded: they resolve from the client netdev's address, as rdmarun does, so their QPs bind to the -d device.\n", filepath.Base(o.cmSource))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, header())
	for _, t := range tests(o) {
		if o.only != "" && !strings.Contains(t.name, o.only) {
			continue
		}
		bs := builds(o)
		client, _, _ := t.devices(o)
		netdev, iters := netdevOf(client), o.latIters
		if t.bandwidth {
			iters = o.bwIters
		}
		var pt []sample
		rr := make([][]sample, len(bs))
		for k := range o.pairs {
			order := []func() error{
				func() error {
					s, err := measureLink(netdev, iters, func() (sample, error) { return runPerftest(o, t, k) })
					pt = append(pt, s)
					return err
				},
			}
			for i, b := range bs {
				order = append(order, func() error {
					s, err := measureLink(netdev, iters, func() (sample, error) { return runRdmarun(o, b, t) })
					rr[i] = append(rr[i], s)
					return err
				})
			}
			if k%2 == 1 {
				slices.Reverse(order)
			}
			for _, f := range order {
				if err := f(); err != nil {
					return fmt.Errorf("%s, run %d: %w", t.name, k+1, err)
				}
			}
		}
		// Printed per test, to show progress; fixed widths keep the rows
		// of every test in line.
		fmt.Fprint(w, rows(t, pt, rr[0]))
		for i := 1; i < len(bs); i++ {
			fmt.Fprint(w, row(t, bs[i].label, pt, rr[i]))
		}
		if c, off := offLink(pt); off {
			fmt.Fprint(w, offLinkNote("perftest", c))
		}
		for i, b := range bs {
			if c, off := offLink(rr[i]); off {
				fmt.Fprint(w, offLinkNote(b.label, c))
			}
		}
	}
	return nil
}

// The table's columns: fixed widths, so that rows printed one test at a
// time line up.
var columns = []struct {
	title string
	width int
}{
	{"test", -26}, {"tool", -10}, {"min us", 9}, {"median us", 10}, {"p99 us", 9}, {"p99.9 us", 9},
	{"Gb/s", 9}, {"Mmsg/s", 8}, {"spread", 17}, {"rdmarun/perftest", 17}, {"95% interval", 15}, {"verdict", -13},
}

func line(cells ...string) string {
	var b strings.Builder
	for i, c := range columns {
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "%*s", c.width, cells[i])
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}

func header() string {
	cells := make([]string, len(columns))
	for i, c := range columns {
		cells[i] = c.title
	}
	return line(cells...)
}

// rows are a test's two table rows: perftest's, then rdmarun's with the
// ratio of medians (messages per second for rate tests, bytes per
// second for bandwidth, the median latency otherwise).
func rows(t test, pt, rr []sample) string {
	p := medianOf(pt)
	f := func(format string, v float64) string { return fmt.Sprintf(format, v) }
	var first string
	switch {
	case t.msgRate:
		first = line(t.name, "perftest", "", "", "", "", f("%.4f", p.bytesPerSec*8/1e9), f("%.4g", p.msgsPerSec/1e6), spread(pt, rateOf, "%.4g"), "", "", "")
	case t.bandwidth:
		first = line(t.name, "perftest", "", "", "", "", f("%.4f", p.bytesPerSec*8/1e9), "", spread(pt, gbpsOf, "%.4f"), "", "", "")
	default:
		first = line(t.name, "perftest", f("%.2f", p.min), f("%.2f", p.median), f("%.2f", p.p99), f("%.2f", p.p999), "", "", spread(pt, latencyOf, "%.2f"), "", "", "")
	}
	return first + row(t, "rdmarun", pt, rr)
}

// row is the table row of one rdmarun build, with its ratio of medians
// to perftest's and the 95% interval of the ratio from the runs' spread
// (rdmarun compare's method): "no difference" when it holds 1.
func row(t test, label string, pt, rr []sample) string {
	p, r := medianOf(pt), medianOf(rr)
	f := func(format string, v float64) string { return fmt.Sprintf(format, v) }
	of := latencyOf
	switch {
	case t.msgRate:
		of = rateOf
	case t.bandwidth:
		of = gbpsOf
	}
	ratio, interval, verdict := f("%.3f", of(r)/of(p)), "", ""
	_, ptOff := offLink(pt)
	_, rrOff := offLink(rr)
	switch {
	case ptOff || rrOff:
		ratio = "off link"
	case len(pt) >= 2 && len(rr) >= 2 && positive(pt, of) && positive(rr, of):
		_, lo, hi := baseline.RatioInterval(values(pt, of), values(rr, of), 0.95)
		interval = fmt.Sprintf("[%.3f, %.3f]", lo, hi)
		verdict = "no difference"
		if lo > 1 || hi < 1 {
			verdict = "differs"
		}
	}
	switch {
	case t.msgRate:
		return line("", label, "", "", "", "", f("%.4f", r.bytesPerSec*8/1e9), f("%.4g", r.msgsPerSec/1e6), spread(rr, rateOf, "%.4g"), ratio, interval, verdict)
	case t.bandwidth:
		return line("", label, "", "", "", "", f("%.4f", r.bytesPerSec*8/1e9), "", spread(rr, gbpsOf, "%.4f"), ratio, interval, verdict)
	default:
		return line("", label, f("%.2f", r.min), f("%.2f", r.median), f("%.2f", r.p99), f("%.2f", r.p999), "", "", spread(rr, latencyOf, "%.2f"), ratio, interval, verdict)
	}
}

func values(runs []sample, of func(sample) float64) []float64 {
	out := make([]float64, len(runs))
	for i, s := range runs {
		out[i] = of(s)
	}
	return out
}

func positive(runs []sample, of func(sample) float64) bool {
	for _, s := range runs {
		if of(s) <= 0 {
			return false
		}
	}
	return true
}

// pinnedCmd runs name with args, pinned to cpu when pin is set.
func pinnedCmd(ctx context.Context, pin bool, cpu, name string, args ...string) *exec.Cmd {
	if pin {
		return exec.CommandContext(ctx, "taskset", append([]string{"-c", cpu, name}, args...)...)
	}
	return exec.CommandContext(ctx, name, args...)
}

// responder is one rdmarun serve of a build: its control channel on
// port of the server address, its CM listener on port+10 (each needs a
// port of its own), on device with gidIndex (-1: the responder chooses).
type responder struct {
	port, device string
	gidIndex     int
	pin          bool
}

func startServe(o options, rdmarun string, r responder) (*exec.Cmd, error) {
	addr := net.JoinHostPort(o.serverAddr, r.port)
	n, err := strconv.Atoi(r.port)
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--device", r.device, "--listen", addr, "--cm-port", strconv.Itoa(n + 10), "--log-level", "warn", "--token-file", o.tokenFile}
	if r.gidIndex >= 0 {
		args = append(args, "--gid-index", strconv.Itoa(r.gidIndex))
	}
	cmd := pinnedCmd(context.Background(), r.pin, serverCPU, rdmarun, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rdmarun serve: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return cmd, nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("rdmarun serve did not listen on %s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func medianOf(runs []sample) sample {
	pick := func(f func(sample) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return sample{
		min:         pick(func(s sample) float64 { return s.min }),
		median:      pick(func(s sample) float64 { return s.median }),
		p99:         pick(func(s sample) float64 { return s.p99 }),
		p999:        pick(func(s sample) float64 { return s.p999 }),
		bytesPerSec: pick(func(s sample) float64 { return s.bytesPerSec }),
		msgsPerSec:  pick(func(s sample) float64 { return s.msgsPerSec }),
	}
}

// What a spread is taken over: a run's median latency, its bandwidth
// in Gb/s, or its message rate in millions per second.
var (
	latencyOf = func(s sample) float64 { return s.median }
	gbpsOf    = func(s sample) float64 { return s.bytesPerSec * 8 / 1e9 }
	rateOf    = func(s sample) float64 { return s.msgsPerSec / 1e6 }
)

// spread is the lowest and highest of val over runs, each written with
// format.
func spread(runs []sample, val func(sample) float64, format string) string {
	lo, hi := val(runs[0]), val(runs[0])
	for _, r := range runs {
		lo, hi = min(lo, val(r)), max(hi, val(r))
	}
	return fmt.Sprintf(format+"-"+format, lo, hi)
}

func runPerftest(o options, t test, k int) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	port := strconv.Itoa(18515 + k%4)
	client, serverDev, addr := t.devices(o)
	common := []string{"-p", port, "-F"}
	if !t.cm {
		// Through the CM, perftest takes the GID the route resolves to.
		common = append(common, "-x", strconv.Itoa(o.gidIndex))
	}
	common = append(common, t.args...)
	server := pinnedCmd(ctx, t.pinned, serverCPU, t.tool, append([]string{"-d", serverDev}, common...)...)
	var serverOut bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		return sample{}, fmt.Errorf("%s server: %w", t.tool, err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()

	var env []string
	if t.cm && o.cmSource != "" {
		src, err := netdevAddress(netdevOf(client))
		if err != nil {
			return sample{}, fmt.Errorf("%s client: %w", t.tool, err)
		}
		env = append(os.Environ(), "LD_PRELOAD="+o.cmSource, "RR_CM_SOURCE="+src.String())
	}
	out, err := perftest.RunClient(ctx, func() *exec.Cmd {
		c := pinnedCmd(ctx, t.pinned, clientCPU, t.tool, append([]string{"-d", client}, append(common, addr)...)...)
		c.Env = env
		return c
	})
	if err != nil {
		return sample{}, fmt.Errorf("%s client: %w\n%s\nserver:\n%s", t.tool, err, out, serverOut.Bytes())
	}
	if t.bandwidth {
		rows, err := perftest.ParseBandwidth(bytes.NewReader(out))
		if err != nil {
			return sample{}, fmt.Errorf("%s output: %w\n%s", t.tool, err, out)
		}
		last := rows[len(rows)-1]
		return sample{bytesPerSec: last.BytesPerSecond(), msgsPerSec: last.MsgRateMpps * 1e6}, nil
	}
	s, err := latencySample(out)
	if err != nil {
		return sample{}, fmt.Errorf("%s output: %w\n%s", t.tool, err, out)
	}
	return s, nil
}

// latencySample reads the last result of a perftest latency report.
func latencySample(out []byte) (sample, error) {
	// perftest prints a NaN standard deviation (seen after a 444 ms
	// stall) as glibc's "-nan", which strconv does not read, and the whole
	// run would be lost for a column compare never uses; "nan" it reads.
	out = bytes.ReplaceAll(out, []byte("-nan"), []byte("nan"))
	rows, err := perftest.ParseLatency(bytes.NewReader(out))
	if err != nil {
		return sample{}, err
	}
	r := rows[len(rows)-1]
	return sample{min: r.Min, median: r.Typical, p99: r.P99, p999: r.P999}, nil
}

type summary struct {
	Min  float64 `json:"min_ns"`
	P50  float64 `json:"p50_ns"`
	P99  float64 `json:"p99_ns"`
	P999 float64 `json:"p99_9_ns"`
}

func runRdmarun(o options, b build, t test) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	port := b.servePort
	switch {
	case t.siw && t.pinned:
		port = b.siwPinnedPort
	case t.siw:
		port = b.siwPort
	case t.pinned:
		port = b.pinnedPort
	}
	client, _, _ := t.devices(o)
	args := []string{"bench", "--peer", net.JoinHostPort(o.serverAddr, port), "--device", client}
	if !t.cm {
		args = append(args, "--gid-index", strconv.Itoa(o.gidIndex))
	}
	args = append(append(args, "--inline", "0", "--json", "-", "--token-file", o.tokenFile), t.bench...)
	cmd := pinnedCmd(ctx, t.pinned, clientCPU, b.path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("%s %s: %w: %s", b.path, strings.Join(args, " "), err, stderr.Bytes())
	}
	// The report (runner/report/schema.json): one run, its result.
	var doc struct {
		Runs []struct {
			Result struct {
				Latency *struct {
					RTT    summary  `json:"rtt"`
					OneWay *summary `json:"one_way"`
				} `json:"latency"`
				Bandwidth *struct {
					Directions []struct {
						BytesPerSecond float64 `json:"bytes_per_second"`
					} `json:"directions"`
				} `json:"bandwidth"`
			} `json:"result"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return sample{}, fmt.Errorf("rdmarun --json: %w", err)
	}
	if len(doc.Runs) != 1 {
		return sample{}, errors.New("rdmarun --json: want exactly one run")
	}
	res := doc.Runs[0].Result
	if t.bandwidth {
		if res.Bandwidth == nil || len(res.Bandwidth.Directions) != 1 {
			return sample{}, errors.New("rdmarun --json: no bandwidth direction")
		}
		bps := res.Bandwidth.Directions[0].BytesPerSecond
		s := sample{bytesPerSec: bps}
		if t.msgRate {
			s.msgsPerSec = bps / float64(t.size)
		}
		return s, nil
	}
	if res.Latency == nil {
		return sample{}, errors.New("rdmarun --json: no latency")
	}
	s := res.Latency.RTT
	if !t.rtt {
		if res.Latency.OneWay == nil {
			return sample{}, errors.New("rdmarun --json: no one-way latency")
		}
		s = *res.Latency.OneWay
	}
	return sample{min: s.Min / 1e3, median: s.P50 / 1e3, p99: s.P99 / 1e3, p999: s.P999 / 1e3}, nil
}
