package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// loopbackCmd runs one test between two endpoints in this process: two
// devices, or one device to itself. It is the single-node self-test, and
// takes every engine setting as a flag.
type loopbackCmd struct {
	op, measure, mode, qpType string
	device, peerDevice        string
	port                      int
	gidIndex                  string
	sizes                     string
	cpus                      string
	spec                      rdma.TestSpec
	duration, stall           time.Duration
	asJSON                    bool
	sizesSet, itersSet        bool
	peer                      string
	tokenFile                 string
	tls                       ctrl.TLSConfig
}

func newLoopbackCmd(app *kingpin.Application) *loopbackCmd {
	c := &loopbackCmd{}
	s := &c.spec
	cmd := app.Command("bench", "Run one test: against a responder (rdmarun serve) with --peer, or between two endpoints in this process (two devices, or one device to itself).").Alias("loopback")
	cmd.Flag("peer", "loopback, or HOST[:PORT] of rdmarun serve.").Default("loopback").StringVar(&c.peer)
	addTokenFlag(cmd, &c.tokenFile)
	cmd.Flag("tls-ca", "Connect with TLS, trusting this CA (PEM).").StringVar(&c.tls.CAFile)
	cmd.Flag("tls-cert", "Client certificate for TLS (PEM).").StringVar(&c.tls.CertFile)
	cmd.Flag("tls-key", "Private key of --tls-cert (PEM).").StringVar(&c.tls.KeyFile)
	cmd.Flag("tls-server-name", "Name to verify in the responder's certificate (default: the host of --peer).").StringVar(&c.tls.ServerName)
	cmd.Flag("op", "Operation: send, send_imm, write, write_imm, read, fetch_add, cmp_swap.").Default("write").StringVar(&c.op)
	cmd.Flag("measure", "latency or bandwidth.").Default("latency").StringVar(&c.measure)
	cmd.Flag("mode", "busy_poll, or event (completion channel).").Default("busy_poll").StringVar(&c.mode)
	cmd.Flag("qp-type", "rc or uc.").Default("rc").StringVar(&c.qpType)
	cmd.Flag("device", "Requester device (default: the first ACTIVE device).").StringVar(&c.device)
	cmd.Flag("peer-device", "Responder device (loopback default: the requester's; remote default: the responder's own).").StringVar(&c.peerDevice)
	cmd.Flag("port", "Port number on both devices.").Default("1").IntVar(&c.port)
	cmd.Flag("gid-index", "GID index on both devices, or auto (IPv4 RoCE v2 first).").Default("auto").StringVar(&c.gidIndex)
	cmd.Flag("sizes", "Message sizes, comma separated, with units (2,64,4KiB). Default: 2 for latency, 64KiB for bandwidth, 8 for atomics.").IsSetByUser(&c.sizesSet).StringVar(&c.sizes)
	cmd.Flag("iters", "Round trips (latency) or messages per QP (bandwidth). Default 1000 / 5000.").IsSetByUser(&c.itersSet).IntVar(&s.Iterations)
	cmd.Flag("duration", "Run for this long instead of a number of iterations.").DurationVar(&c.duration)
	cmd.Flag("warmup", "Latency round trips before the measured ones (default: 10% of iterations, at most 100).").IntVar(&s.Warmup)
	cmd.Flag("qps", "Queue pairs.").Default("1").IntVar(&s.QPs)
	cmd.Flag("threads", "Threads per side; QPs are spread over them.").Default("1").IntVar(&s.Threads)
	cmd.Flag("cpus", "Pin the threads to these CPUs, round robin (e.g. 0,1).").StringVar(&c.cpus)
	cmd.Flag("tx-depth", "Outstanding send WRs per QP (default 128 bandwidth, 16 latency).").IntVar(&s.TxDepth)
	cmd.Flag("rx-depth", "Receives kept posted per QP (default 512 bandwidth, 16 latency).").IntVar(&s.RxDepth)
	cmd.Flag("cq-mod", "Signal every Nth send WR (bandwidth; default min(100, tx-depth)).").IntVar(&s.CQModeration)
	cmd.Flag("post-list", "WRs per ibv_post_send call (bandwidth).").Default("1").IntVar(&s.PostList)
	cmd.Flag("inline", "Largest message sent inline, in bytes (0: none).").Default("0").IntVar(&s.Inline)
	cmd.Flag("bidir", "Bidirectional bandwidth: both ends send.").BoolVar(&s.Bidirectional)
	cmd.Flag("hugepages", "Put the buffers on 2 MiB huge pages (reserve them first in /proc/sys/vm/nr_hugepages).").BoolVar(&s.Hugepages)
	cmd.Flag("validate", "Write a random pattern and check that it arrived.").BoolVar(&s.Validate)
	cmd.Flag("mtu", "Path MTU in bytes (0: the ports' active MTU).").Default("0").IntVar(&s.QP.MTU)
	cmd.Flag("qp-timeout", "QP local ACK timeout exponent (4.096 us * 2^n).").Default("14").IntVar(&s.QP.Timeout)
	cmd.Flag("retry-cnt", "QP transport retry count (7 retries forever on soft-RoCE).").Default("6").IntVar(&s.QP.RetryCnt)
	cmd.Flag("rnr-retry", "QP receiver-not-ready retries (7: forever).").Default("7").IntVar(&s.QP.RNRRetry)
	cmd.Flag("max-rd-atomic", "Outstanding reads and atomics per QP.").Default("1").IntVar(&s.QP.MaxRdAtomic)
	cmd.Flag("sl", "Service level.").Default("0").IntVar(&s.QP.SL)
	cmd.Flag("tclass", "Traffic class (RoCE: DSCP << 2 | ECN).").Default("0").IntVar(&s.QP.TrafficClass)
	cmd.Flag("stall-timeout", "End the run when nothing happens for this long.").Default("5s").DurationVar(&c.stall)
	cmd.Flag("json", "Print JSON instead of a table.").BoolVar(&c.asJSON)
	return c
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := units.ParseBytes(f)
		if err != nil {
			return nil, fmt.Errorf("--sizes: %w", err)
		}
		if n < 1 || n > 1<<30 {
			return nil, fmt.Errorf("--sizes: %s is outside 1B..1GiB", strings.TrimSpace(f))
		}
		sizes = append(sizes, int(n))
	}
	return sizes, nil
}

// parse turns the flags into a checked spec and the sizes to run it at.
func (c *loopbackCmd) parse() (rdma.TestSpec, []int, int, error) {
	s := c.spec
	var err error
	if s.Op, err = rdma.ParseOp(c.op); err != nil {
		return s, nil, 0, fmt.Errorf("--op: %w", err)
	}
	if s.Measure, err = rdma.ParseMeasure(c.measure); err != nil {
		return s, nil, 0, fmt.Errorf("--measure: %w", err)
	}
	if s.Mode, err = rdma.ParseMode(c.mode); err != nil {
		return s, nil, 0, fmt.Errorf("--mode: %w", err)
	}
	if s.QPType, err = rdma.ParseQPType(c.qpType); err != nil {
		return s, nil, 0, fmt.Errorf("--qp-type: %w", err)
	}
	s.Duration = rdma.Duration(c.duration)
	s.StallTimeout = rdma.Duration(c.stall)
	if c.cpus != "" {
		for _, f := range strings.Split(c.cpus, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				return s, nil, 0, fmt.Errorf("--cpus %q: want CPU numbers such as 0,1", c.cpus)
			}
			s.CPUs = append(s.CPUs, n)
		}
	}
	// A zero here would silently become the engine's default.
	switch {
	case c.itersSet && s.Iterations < 1:
		return s, nil, 0, fmt.Errorf("--iters %d: want at least 1", s.Iterations)
	case s.QPs < 1:
		return s, nil, 0, fmt.Errorf("--qps %d: want at least 1", s.QPs)
	case s.Threads < 1:
		return s, nil, 0, fmt.Errorf("--threads %d: want at least 1", s.Threads)
	case c.itersSet && c.duration > 0:
		return s, nil, 0, errors.New("--iters and --duration: give one, not both")
	}
	var sizes []int
	if c.sizesSet || c.sizes != "" {
		if sizes, err = parseSizes(c.sizes); err != nil {
			return s, nil, 0, err
		}
	} else {
		sizes = []int{s.WithDefaults().Size}
	}
	gid := rdma.AutoGIDIndex
	if c.gidIndex != "auto" {
		n, err := strconv.Atoi(c.gidIndex)
		if err != nil || n < 0 {
			return s, nil, 0, fmt.Errorf("--gid-index %q: want auto or an index from `rdmarun devices`", c.gidIndex)
		}
		gid = n
	}
	for _, size := range sizes {
		t := s
		t.Size = size
		if err := t.WithDefaults().Check(); err != nil {
			return s, nil, 0, err
		}
	}
	return s, sizes, gid, nil
}

func (c *loopbackCmd) run(w io.Writer) error {
	spec, sizes, gid, err := c.parse()
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	if c.device == "" {
		if c.device, err = firstActiveDevice(c.port); err != nil {
			return err
		}
	}
	// Ctrl-C ends the current run cleanly; what finished is still printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var results []*rdma.Result
	var runErr error
	if c.peer == "loopback" {
		results, runErr = c.runLoopback(ctx, spec, sizes, gid)
	} else {
		results, runErr = c.runRemote(ctx, spec, sizes, gid)
	}
	if c.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Results []*rdma.Result `json:"results"`
		}{results}); err != nil {
			return err
		}
	} else if err := printResults(w, results); err != nil {
		return err
	}
	return runErr
}

func (c *loopbackCmd) runLoopback(ctx context.Context, spec rdma.TestSpec, sizes []int, gid int) ([]*rdma.Result, error) {
	if c.peerDevice == "" {
		c.peerDevice = c.device
	}
	sized := spec
	sized.Size = slices.Max(sizes)
	reqCfg, respCfg := rdma.PairConfig(sized,
		rdma.EndpointConfig{Device: c.device, Port: c.port, GIDIndex: gid},
		rdma.EndpointConfig{Device: c.peerDevice, Port: c.port, GIDIndex: gid})
	pair, err := rdma.NewLoopbackPair(reqCfg, respCfg, spec.QP)
	if err != nil {
		return nil, environmentError(err)
	}
	defer pair.Close()
	var results []*rdma.Result
	for _, size := range sizes {
		s := spec
		s.Size = size
		res, err := pair.Run(ctx, s)
		if err != nil {
			return results, &exitError{exitAborted, fmt.Errorf("%s %s, %s: %w", s.Op, s.Measure, units.FormatBytes(uint64(size)), err)}
		}
		results = append(results, res)
	}
	return results, nil
}

// runRemote runs each size as its own test against the responder: a new
// control connection and new QPs per size, as a CI gate would.
func (c *loopbackCmd) runRemote(ctx context.Context, spec rdma.TestSpec, sizes []int, gid int) ([]*rdma.Result, error) {
	token, err := readToken(c.tokenFile)
	if err != nil {
		return nil, &exitError{exitInvalid, err}
	}
	cfg := peer.ClientConfig{Addr: c.peer, Token: token, Device: c.device, Port: c.port, GIDIndex: gid, PeerDevice: c.peerDevice}
	if c.gidIndex != "auto" {
		cfg.PeerGIDIndex = &gid
	}
	if c.tls.CAFile != "" || c.tls.CertFile != "" || c.tls.ServerName != "" {
		if cfg.TLS, err = c.tls.ClientConfig(); err != nil {
			return nil, &exitError{exitInvalid, err}
		}
	}
	var results []*rdma.Result
	for _, size := range sizes {
		s := spec
		s.Size = size
		res, err := peer.Run(ctx, cfg, s)
		if err != nil {
			code := exitAborted
			if errors.Is(err, peer.ErrUnreachable) {
				code = exitEnvironment
			}
			return results, &exitError{code, fmt.Errorf("%s %s, %s: %w", s.Op, s.Measure, units.FormatBytes(uint64(size)), err)}
		}
		results = append(results, res)
	}
	return results, nil
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

func printResults(w io.Writer, results []*rdma.Result) error {
	if len(results) == 0 {
		return nil
	}
	r0 := results[0]
	s := r0.Spec
	fmt.Fprintf(w, "%s %s, %s port %d (GID %d, %s) -> %s port %d (GID %d), %s, path MTU %d B, %s, %d QP(s) on %d thread(s) per side\n",
		s.Op, s.Measure, r0.Requester.Device, r0.Requester.Port, r0.Requester.GIDIndex, r0.Requester.GIDType,
		r0.Responder.Device, r0.Responder.Port, r0.Responder.GIDIndex, strings.ToUpper(s.QPType.String()), s.QP.MTU, s.Mode, s.QPs, s.Threads)
	fmt.Fprintf(w, "QP: timeout %d, retry_cnt %d, rnr_retry %d; inline up to %d B.\n", s.QP.Timeout, s.QP.RetryCnt, s.QP.RNRRetry, s.Inline)
	if s.Measure == rdma.MeasureLatency {
		return printLatency(w, results)
	}
	return printBandwidth(w, results)
}

func printLatency(w io.Writer, results []*rdma.Result) error {
	oneWay := results[0].Latency.OneWay != nil
	fmt.Fprint(w, "Times in microseconds. RTT is the round trip")
	if oneWay {
		fmt.Fprint(w, "; one-way is RTT/2, what perftest reports for send and write")
	}
	fmt.Fprint(w, ".\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "size\titers\tRTT min\tRTT p50\tRTT p90\tRTT p99\tRTT p99.9\tRTT max\tRTT mean\tstddev\t"
	if oneWay {
		hdr += "one-way p50\t"
	}
	fmt.Fprintln(tw, hdr)
	for _, r := range results {
		l := r.Latency.RTT
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t",
			units.FormatBytes(uint64(r.Spec.Size)), l.Count, units.Micros(l.Min), units.Micros(l.P50), units.Micros(l.P90),
			units.Micros(l.P99), units.Micros(l.P999), units.Micros(l.Max), units.Micros(l.Mean), units.Micros(l.Stddev))
		if oneWay {
			fmt.Fprintf(tw, "%s\t", units.Micros(r.Latency.OneWay.P50))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func printBandwidth(w io.Writer, results []*rdma.Result) error {
	fmt.Fprint(w, "Bandwidth from first post to last completion. Gb/s is 10^9 bit/s; GiB/s is 2^30 bytes/s.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tdirection\tmessages\tseconds\tGb/s\tGiB/s\tMmsg/s\t")
	for _, r := range results {
		for _, d := range r.Bandwidth.Directions {
			fmt.Fprintf(tw, "%s\t%s -> %s\t%d\t%.3f\t%.3f\t%.4f\t%.4f\t\n", units.FormatBytes(uint64(r.Spec.Size)), d.From, d.To,
				d.Messages, d.Seconds, d.Gbps(), d.GiBps(), d.MessagesPerSec/1e6)
		}
	}
	return tw.Flush()
}
