// Command compare runs perftest's ib_write_lat and rdmarun's write latency
// on the same devices, sizes and iteration counts, interleaved (perftest,
// rdmarun, rdmarun, perftest, ...) so that drift in a noisy emulated VM
// hits both alike, and prints them side by side. It runs inside the
// testbed VM: make compare.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rdmarun/rdmarun/internal/perftest"
	"github.com/rdmarun/rdmarun/units"
)

type options struct {
	rdmarun    string
	sizes      []int
	iters      int
	warmup     int
	pairs      int
	serverDev  string
	clientDev  string
	gidIndex   int
	serverAddr string
	timeout    time.Duration
}

// stats is one run's one-way latency in microseconds.
type stats struct{ min, median, p99, p999 float64 }

func main() { os.Exit(run()) }

func run() int {
	var o options
	var sizes string
	flag.StringVar(&o.rdmarun, "rdmarun", "rdmarun", "path of the rdmarun binary")
	flag.StringVar(&sizes, "sizes", "2,64,1024,4096", "message sizes")
	flag.IntVar(&o.iters, "iters", 1000, "iterations per run, for both tools")
	flag.IntVar(&o.warmup, "warmup", 100, "rdmarun warm-up iterations (perftest's latency tools have none)")
	flag.IntVar(&o.pairs, "pairs", 5, "interleaved runs of each tool per size")
	flag.StringVar(&o.serverDev, "server-device", "rxe0", "device of the answering side")
	flag.StringVar(&o.clientDev, "client-device", "rxe1", "device of the timing side")
	flag.IntVar(&o.gidIndex, "gid-index", 1, "GID index on both devices")
	flag.StringVar(&o.serverAddr, "server-addr", "10.0.0.1", "IP address of the server device's netdev")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "deadline of each tool run")
	flag.Parse()
	for _, s := range strings.Split(sizes, ",") {
		n, err := units.ParseBytes(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "compare: --sizes: %v\n", err)
			return 3
		}
		o.sizes = append(o.sizes, int(n))
	}
	if err := compare(os.Stdout, o); err != nil {
		fmt.Fprintf(os.Stderr, "compare: %v\n", err)
		return 1
	}
	return 0
}

func compare(w io.Writer, o options) error {
	fmt.Fprintf(w, "RDMA WRITE latency: perftest ib_write_lat vs rdmarun, %s -> %s (GID index %d), RC, busy-poll.\n", o.clientDev, o.serverDev, o.gidIndex)
	fmt.Fprintf(w, "One-way latency (RTT/2, as ib_write_lat reports it) in microseconds; %d iterations per run, %d interleaved runs per tool and size.\n", o.iters, o.pairs)
	fmt.Fprintf(w, "Each cell is the median over runs; the spread column gives the lowest and highest per-run median.\n")
	fmt.Fprintf(w, "perftest runs server and client as two processes; rdmarun loopback runs both ends in one process, the responder in its own thread. Neither sends inline.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\ttool\tmin\tmedian\tp99\tp99.9\tmedian spread\tratio of medians\t")
	for _, size := range o.sizes {
		var pt, rr []stats
		for k := range o.pairs {
			// Alternate which tool goes first, so neither always runs
			// on a warmer or cooler VM.
			order := []func() error{
				func() error { s, err := runPerftest(o, size, k); pt = append(pt, s); return err },
				func() error { s, err := runRdmarun(o, size); rr = append(rr, s); return err },
			}
			if k%2 == 1 {
				slices.Reverse(order)
			}
			for _, f := range order {
				if err := f(); err != nil {
					return fmt.Errorf("size %d, run %d: %w", size, k+1, err)
				}
			}
		}
		p, r := medianOf(pt), medianOf(rr)
		fmt.Fprintf(tw, "%s\tperftest\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\t\n", units.FormatBytes(uint64(size)), p.min, p.median, p.p99, p.p999, spread(pt))
		fmt.Fprintf(tw, "\trdmarun\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%.3f\t\n", r.min, r.median, r.p99, r.p999, spread(rr), r.median/p.median)
	}
	return tw.Flush()
}

func medianOf(runs []stats) stats {
	pick := func(f func(stats) float64) float64 {
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
	return stats{
		min:    pick(func(s stats) float64 { return s.min }),
		median: pick(func(s stats) float64 { return s.median }),
		p99:    pick(func(s stats) float64 { return s.p99 }),
		p999:   pick(func(s stats) float64 { return s.p999 }),
	}
}

func spread(runs []stats) string {
	lo, hi := runs[0].median, runs[0].median
	for _, r := range runs {
		lo, hi = min(lo, r.median), max(hi, r.median)
	}
	return fmt.Sprintf("%.2f-%.2f", lo, hi)
}

func runPerftest(o options, size, k int) (stats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	port := strconv.Itoa(18515 + k)
	common := []string{"-x", strconv.Itoa(o.gidIndex), "-s", strconv.Itoa(size), "-n", strconv.Itoa(o.iters), "-p", port, "-F"}
	server := exec.CommandContext(ctx, "ib_write_lat", append([]string{"-d", o.serverDev}, common...)...)
	var serverOut bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		return stats{}, fmt.Errorf("ib_write_lat server: %w", err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()

	// The client fails at once while the server is not listening yet;
	// try again until it connects or the deadline passes.
	var out []byte
	var err error
	for ctx.Err() == nil {
		client := exec.CommandContext(ctx, "ib_write_lat", append([]string{"-d", o.clientDev}, append(common, o.serverAddr)...)...)
		out, err = client.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("Couldn't connect")) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return stats{}, fmt.Errorf("ib_write_lat client: %w\n%s\nserver:\n%s", err, out, serverOut.Bytes())
	}
	rows, err := perftest.ParseLatency(bytes.NewReader(out))
	if err != nil {
		return stats{}, fmt.Errorf("ib_write_lat client output: %w\n%s", err, out)
	}
	if os.Getenv("COMPARE_SHOW_PERFTEST") != "" {
		os.Stderr.Write(out)
	}
	r := rows[len(rows)-1]
	return stats{min: r.Min, median: r.Typical, p99: r.P99, p999: r.P999}, nil
}

func runRdmarun(o options, size int) (stats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.rdmarun, "loopback", "--op", "write",
		"--device", o.clientDev, "--peer-device", o.serverDev, "--gid-index", strconv.Itoa(o.gidIndex),
		"--sizes", strconv.Itoa(size), "--iters", strconv.Itoa(o.iters), "--warmup", strconv.Itoa(o.warmup),
		// perftest does not recognise rxe as inline-capable and sends
		// nothing inline; the comparison does the same.
		"--inline", "0", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stats{}, fmt.Errorf("rdmarun: %w: %s", err, stderr.Bytes())
	}
	var doc struct {
		Results []struct {
			Latency struct {
				OneWay struct {
					Min  float64 `json:"min_ns"`
					P50  float64 `json:"p50_ns"`
					P99  float64 `json:"p99_ns"`
					P999 float64 `json:"p99_9_ns"`
				} `json:"one_way"`
			} `json:"latency"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return stats{}, fmt.Errorf("rdmarun --json: %w", err)
	}
	if len(doc.Results) != 1 {
		return stats{}, errors.New("rdmarun --json: want exactly one result")
	}
	s := doc.Results[0].Latency.OneWay
	return stats{min: s.Min / 1e3, median: s.P50 / 1e3, p99: s.P99 / 1e3, p999: s.P999 / 1e3}, nil
}
