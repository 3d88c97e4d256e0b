package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// loopbackCmd measures between two endpoints in this process: two
// devices, or one device to itself. It is the single-node self-test.
type loopbackCmd struct {
	op         string
	device     string
	peerDevice string
	port       int
	gidIndex   string
	sizes      string
	iters      int
	warmup     int
	mtu        int
	timeout    int
	retryCnt   int
	stall      time.Duration
	threads    int
	inline     int
	asJSON     bool
}

func newLoopbackCmd(app *kingpin.Application) *loopbackCmd {
	c := &loopbackCmd{}
	cmd := app.Command("loopback", "Measure between two endpoints in this process (two devices, or one device to itself).")
	cmd.Flag("op", "Operation: write.").Default("write").EnumVar(&c.op, "write")
	cmd.Flag("device", "Requester device (default: the first ACTIVE device).").StringVar(&c.device)
	cmd.Flag("peer-device", "Responder device (default: the requester's).").StringVar(&c.peerDevice)
	cmd.Flag("port", "Port number on both devices.").Default("1").IntVar(&c.port)
	cmd.Flag("gid-index", "GID index on both devices, or auto (IPv4 RoCE v2 first).").Default("auto").StringVar(&c.gidIndex)
	cmd.Flag("sizes", "Message sizes, comma separated, with units (2,64,4KiB).").Default("2").StringVar(&c.sizes)
	cmd.Flag("iters", "Measured iterations per size.").Default("1000").IntVar(&c.iters)
	cmd.Flag("warmup", "Warm-up iterations per size, not measured.").Default("100").IntVar(&c.warmup)
	cmd.Flag("mtu", "Path MTU in bytes (0: the ports' active MTU).").Default("0").IntVar(&c.mtu)
	cmd.Flag("qp-timeout", "QP local ACK timeout exponent (4.096 us * 2^n).").Default("14").IntVar(&c.timeout)
	cmd.Flag("retry-cnt", "QP transport retry count (7 retries forever on soft-RoCE).").Default("6").IntVar(&c.retryCnt)
	cmd.Flag("stall-timeout", "End the run when nothing arrives for this long.").Default("5s").DurationVar(&c.stall)
	cmd.Flag("threads", "1: one thread drives both ends; 2: the responder answers from its own thread, as a remote peer would.").Default("2").IntVar(&c.threads)
	cmd.Flag("inline", "Largest message sent inline (0: none).").Default("220").IntVar(&c.inline)
	cmd.Flag("json", "Print JSON instead of a table.").BoolVar(&c.asJSON)
	return c
}

func (c *loopbackCmd) parse() ([]int, int, error) {
	var sizes []int
	for _, f := range strings.Split(c.sizes, ",") {
		n, err := units.ParseBytes(f)
		if err != nil {
			return nil, 0, fmt.Errorf("--sizes: %w", err)
		}
		if n < 1 || n > 1<<30 {
			return nil, 0, fmt.Errorf("--sizes: %s is outside 1B..1GiB", strings.TrimSpace(f))
		}
		sizes = append(sizes, int(n))
	}
	gid := rdma.AutoGIDIndex
	if c.gidIndex != "auto" {
		n, err := strconv.Atoi(c.gidIndex)
		if err != nil || n < 0 {
			return nil, 0, fmt.Errorf("--gid-index %q: want auto or an index from `rdmarun devices`", c.gidIndex)
		}
		gid = n
	}
	if c.iters < 1 {
		return nil, 0, fmt.Errorf("--iters %d: want at least 1", c.iters)
	}
	if c.threads < 1 || c.threads > 2 {
		return nil, 0, fmt.Errorf("--threads %d: want 1 or 2", c.threads)
	}
	if c.inline < 0 {
		return nil, 0, fmt.Errorf("--inline %d: must not be negative", c.inline)
	}
	if c.warmup < 0 {
		return nil, 0, fmt.Errorf("--warmup %d: must not be negative", c.warmup)
	}
	return sizes, gid, nil
}

func (c *loopbackCmd) run(w io.Writer) error {
	sizes, gid, err := c.parse()
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	attrs := rdma.QPAttrs{MTU: c.mtu, Timeout: c.timeout, RetryCnt: c.retryCnt}
	if err := attrs.Validate(); err != nil {
		return &exitError{exitInvalid, err}
	}
	if c.device == "" {
		if c.device, err = firstActiveDevice(c.port); err != nil {
			return err
		}
	}
	if c.peerDevice == "" {
		c.peerDevice = c.device
	}
	maxSize := 0
	for _, s := range sizes {
		maxSize = max(maxSize, s)
	}
	pair, err := rdma.NewLoopbackPair(
		rdma.EndpointConfig{Device: c.device, Port: c.port, GIDIndex: gid, MaxMessage: maxSize, MaxInline: inlineSetting(c.inline)},
		rdma.EndpointConfig{Device: c.peerDevice, Port: c.port, GIDIndex: gid, MaxMessage: maxSize, MaxInline: inlineSetting(c.inline)},
		attrs)
	if err != nil {
		return environmentError(err)
	}
	defer pair.Close()

	var results []*rdma.LatencyResult
	for _, size := range sizes {
		res, err := pair.WriteLatency(rdma.LatencyOptions{Size: size, Iterations: c.iters, Warmup: c.warmup, StallTimeout: c.stall, Threads: c.threads})
		if err != nil {
			return &exitError{exitAborted, fmt.Errorf("write latency, %s: %w", units.FormatBytes(uint64(size)), err)}
		}
		results = append(results, res)
	}
	if c.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Results []*rdma.LatencyResult `json:"results"`
		}{results})
	}
	return printLatency(w, results)
}

// inlineSetting maps the flag's 0 ("none") to the config's negative.
func inlineSetting(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func firstActiveDevice(port int) (string, error) {
	devs, err := listDevices()
	if err != nil {
		return "", environmentError(err)
	}
	for _, d := range devs {
		if p, err := d.Port(port); err == nil && p.State == "ACTIVE" {
			return d.Name, nil
		}
	}
	if len(devs) == 0 {
		return "", environmentError(rdma.ErrNoDevice)
	}
	return "", &exitError{exitEnvironment, errors.New("no device has an ACTIVE port " + strconv.Itoa(port) + " (see rdmarun devices)")}
}

func threadsText(n int) string {
	if n == 1 {
		return "one thread drives both ends"
	}
	return "the responder answers from its own thread"
}

func printLatency(w io.Writer, results []*rdma.LatencyResult) error {
	if len(results) == 0 {
		return nil
	}
	r0 := results[0]
	fmt.Fprintf(w, "RDMA WRITE ping-pong latency, %s port %d (GID %d, %s) -> %s port %d (GID %d), RC, path MTU %d B, busy-poll\n",
		r0.Requester.Device, r0.Requester.Port, r0.Requester.GIDIndex, r0.Requester.GIDType,
		r0.Responder.Device, r0.Responder.Port, r0.Responder.GIDIndex, r0.QP.MTU)
	fmt.Fprintf(w, "QP: timeout %d, retry_cnt %d, rnr_retry %d; max inline %d B; %s.\nTimes in microseconds; RTT is the round trip, one-way is RTT/2.\n\n",
		r0.QP.Timeout, r0.QP.RetryCnt, r0.QP.RNRRetry, r0.Requester.MaxInline, threadsText(r0.Threads))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\titers\tinline\tRTT min\tRTT p50\tRTT p99\tRTT p99.9\tRTT max\tRTT mean\tstddev\tone-way p50\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			units.FormatBytes(uint64(r.Size)), r.Iterations, r.Inline,
			units.Micros(r.RTT.Min), units.Micros(r.RTT.P50), units.Micros(r.RTT.P99), units.Micros(r.RTT.P999),
			units.Micros(r.RTT.Max), units.Micros(r.RTT.Mean), units.Micros(r.RTT.Stddev), units.Micros(r.OneWay.P50))
	}
	return tw.Flush()
}
