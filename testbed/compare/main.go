// Command compare runs perftest's tools and rdmarun on the same devices,
// sizes and iteration counts, interleaved (perftest, rdmarun, rdmarun,
// perftest, ...) so that drift in a noisy emulated VM hits both alike,
// and prints them side by side. Both run as two processes: perftest's
// server and client, and `rdmarun serve` with `rdmarun bench --peer`.
// It runs inside the testbed VM: make compare.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
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
