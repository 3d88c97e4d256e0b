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
	"text/tabwriter"
	"time"

	"github.com/rdmarun/rdmarun/internal/perftest"
)

type options struct {
	tokenFile  string // the responder's token, made by rdmarun token for this run
	rdmarun    string
	latIters   int
	bwIters    int
	pairs      int
	serverDev  string
	clientDev  string
	gidIndex   int
	serverAddr string
	only       string
	timeout    time.Duration
}

// test is one perftest tool run and the rdmarun run that measures the same.
type test struct {
	name      string   // as printed
	tool      string   // perftest binary
	args      []string // perftest arguments for both sides
	bench     []string // rdmarun bench arguments
	bandwidth bool
	rtt       bool // perftest reports the round trip (read, atomics), not half of it
}

func tests(o options) []test {
	lat, bw := strconv.Itoa(o.latIters), strconv.Itoa(o.bwIters)
	// Reads and atomics may have 16 outstanding on both tools: perftest
	// defaults to the device's maximum, rdmarun to 1.
	return []test{
		{name: "write lat 2B", tool: "ib_write_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "write", "--sizes", "2", "--iters", lat}},
		{name: "read lat 2B", tool: "ib_read_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "read", "--sizes", "2", "--iters", lat}, rtt: true},
		{name: "send lat 2B", tool: "ib_send_lat", args: []string{"-s", "2", "-n", lat}, bench: []string{"--op", "send", "--sizes", "2", "--iters", lat}},
		{name: "atomic lat 8B", tool: "ib_atomic_lat", args: []string{"-n", lat}, bench: []string{"--op", "fetch_add", "--iters", lat}, rtt: true},
		{name: "write bw 64KiB", tool: "ib_write_bw", args: []string{"-s", "65536", "-n", bw}, bench: []string{"--op", "write", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw}, bandwidth: true},
		{name: "write bw 64KiB 4 QPs", tool: "ib_write_bw", args: []string{"-s", "65536", "-n", bw, "-q", "4"}, bench: []string{"--op", "write", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw, "--qps", "4"}, bandwidth: true},
		{name: "read bw 64KiB", tool: "ib_read_bw", args: []string{"-s", "65536", "-n", bw, "-o", "16"}, bench: []string{"--op", "read", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw, "--max-rd-atomic", "16"}, bandwidth: true},
		{name: "send bw 64KiB", tool: "ib_send_bw", args: []string{"-s", "65536", "-n", bw}, bench: []string{"--op", "send", "--measure", "bandwidth", "--sizes", "64KiB", "--iters", bw}, bandwidth: true},
	}
}

// sample is one run: latency in microseconds, or bandwidth in bytes/s.
type sample struct{ min, median, p99, p999, bytesPerSec float64 }

func main() { os.Exit(run()) }

func run() int {
	var o options
	flag.StringVar(&o.rdmarun, "rdmarun", "rdmarun", "path of the rdmarun binary")
	flag.IntVar(&o.latIters, "lat-iters", 1000, "iterations of each latency run, for both tools")
	flag.IntVar(&o.bwIters, "bw-iters", 1000, "messages per QP of each bandwidth run, for both tools")
	flag.IntVar(&o.pairs, "pairs", 5, "interleaved runs of each tool per test")
	flag.StringVar(&o.serverDev, "server-device", "rxe0", "device of the answering side")
	flag.StringVar(&o.clientDev, "client-device", "rxe1", "device of the measuring side")
	flag.IntVar(&o.gidIndex, "gid-index", 1, "GID index on both devices")
	flag.StringVar(&o.serverAddr, "server-addr", "10.0.0.1", "IP address of the server device's netdev")
	flag.StringVar(&o.only, "only", "", "run only the tests whose name contains this")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "deadline of each tool run")
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
	serve, err := startServe(o)
	if err != nil {
		return err
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()

	fmt.Fprintf(w, "perftest vs rdmarun, %s -> %s (GID index %d), RC, busy-poll, no inline data (perftest does not use inline on rxe), two processes each.\n", o.clientDev, o.serverDev, o.gidIndex)
	fmt.Fprintf(w, "%d interleaved runs per tool and test; each cell is the median over runs, the spread the lowest and highest per-run median or average.\n", o.pairs)
	fmt.Fprintf(w, "Latency in microseconds: one-way (RTT/2) for write and send, round trip for read and atomics, as perftest reports them.\n")
	fmt.Fprintf(w, "Bandwidth from first post to last completion, in Gb/s (10^9 bit/s); perftest's MB/sec is MiB/s and is converted.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test\ttool\tmin us\tmedian us\tp99 us\tp99.9 us\tGb/s\tspread\trdmarun/perftest\t")
	for _, t := range tests(o) {
		if o.only != "" && !strings.Contains(t.name, o.only) {
			continue
		}
		var pt, rr []sample
		for k := range o.pairs {
			order := []func() error{
				func() error { s, err := runPerftest(o, t, k); pt = append(pt, s); return err },
				func() error { s, err := runRdmarun(o, t); rr = append(rr, s); return err },
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
		p, r := medianOf(pt), medianOf(rr)
		if t.bandwidth {
			fmt.Fprintf(tw, "%s\tperftest\t\t\t\t\t%.4f\t%s\t\t\n", t.name, p.bytesPerSec*8/1e9, spread(pt, true))
			fmt.Fprintf(tw, "\trdmarun\t\t\t\t\t%.4f\t%s\t%.3f\t\n", r.bytesPerSec*8/1e9, spread(rr, true), r.bytesPerSec/p.bytesPerSec)
		} else {
			fmt.Fprintf(tw, "%s\tperftest\t%.2f\t%.2f\t%.2f\t%.2f\t\t%s\t\t\n", t.name, p.min, p.median, p.p99, p.p999, spread(pt, false))
			fmt.Fprintf(tw, "\trdmarun\t%.2f\t%.2f\t%.2f\t%.2f\t\t%s\t%.3f\t\n", r.min, r.median, r.p99, r.p999, spread(rr, false), r.median/p.median)
		}
		// Flushing per test shows progress; columns may shift a little.
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func startServe(o options) (*exec.Cmd, error) {
	addr := net.JoinHostPort(o.serverAddr, "18520")
	cmd := exec.Command(o.rdmarun, "serve", "--device", o.serverDev, "--gid-index", strconv.Itoa(o.gidIndex), "--listen", addr, "--log-level", "warn", "--token-file", o.tokenFile)
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
	}
}

func spread(runs []sample, bw bool) string {
	val := func(s sample) float64 {
		if bw {
			return s.bytesPerSec * 8 / 1e9
		}
		return s.median
	}
	lo, hi := val(runs[0]), val(runs[0])
	for _, r := range runs {
		lo, hi = min(lo, val(r)), max(hi, val(r))
	}
	if bw {
		return fmt.Sprintf("%.4f-%.4f", lo, hi)
	}
	return fmt.Sprintf("%.2f-%.2f", lo, hi)
}

func runPerftest(o options, t test, k int) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	port := strconv.Itoa(18515 + k%4)
	common := append([]string{"-x", strconv.Itoa(o.gidIndex), "-p", port, "-F"}, t.args...)
	server := exec.CommandContext(ctx, t.tool, append([]string{"-d", o.serverDev}, common...)...)
	var serverOut bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		return sample{}, fmt.Errorf("%s server: %w", t.tool, err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()

	// The client fails at once while the server is not listening yet;
	// try again until it connects or the deadline passes.
	var out []byte
	var err error
	for ctx.Err() == nil {
		client := exec.CommandContext(ctx, t.tool, append([]string{"-d", o.clientDev}, append(common, o.serverAddr)...)...)
		out, err = client.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("Couldn't connect")) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return sample{}, fmt.Errorf("%s client: %w\n%s\nserver:\n%s", t.tool, err, out, serverOut.Bytes())
	}
	if t.bandwidth {
		rows, err := perftest.ParseBandwidth(bytes.NewReader(out))
		if err != nil {
			return sample{}, fmt.Errorf("%s output: %w\n%s", t.tool, err, out)
		}
		return sample{bytesPerSec: rows[len(rows)-1].BytesPerSecond()}, nil
	}
	rows, err := perftest.ParseLatency(bytes.NewReader(out))
	if err != nil {
		return sample{}, fmt.Errorf("%s output: %w\n%s", t.tool, err, out)
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

func runRdmarun(o options, t test) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	args := append([]string{"bench", "--peer", net.JoinHostPort(o.serverAddr, "18520"), "--device", o.clientDev,
		"--gid-index", strconv.Itoa(o.gidIndex), "--inline", "0", "--json", "-", "--token-file", o.tokenFile}, t.bench...)
	cmd := exec.CommandContext(ctx, o.rdmarun, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("rdmarun %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
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
		return sample{bytesPerSec: res.Bandwidth.Directions[0].BytesPerSecond}, nil
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
