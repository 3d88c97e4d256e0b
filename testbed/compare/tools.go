package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/internal/perftest"
)

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
