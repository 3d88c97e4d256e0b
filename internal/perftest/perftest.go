// Package perftest reads the text reports of perftest's latency tools
// (ib_write_lat, ib_read_lat, ib_send_lat, ib_atomic_lat), so that
// comparison scripts can put perftest's numbers beside the project's. Its
// --out_json files are not valid JSON, so the human report is parsed.
package perftest

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Latency is one result row of a perftest latency report, in microseconds
// as perftest prints it. For write and send perftest reports half the
// round trip; for read and atomics the whole round trip.
type Latency struct {
	Bytes      int
	Iterations int
	Min        float64
	Max        float64
	Typical    float64 // perftest's median
	Avg        float64
	Stdev      float64
	P99        float64
	P999       float64
}

// latencyHeader starts the line that names the columns.
const latencyHeader = "#bytes #iterations"

// ParseLatency reads every result row that follows a latency header.
func ParseLatency(r io.Reader) ([]Latency, error) {
	sc := bufio.NewScanner(r)
	var out []Latency
	inTable := false
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, latencyHeader) {
			if !strings.Contains(text, "t_typical") {
				return nil, fmt.Errorf("line %d: latency header without t_typical (duration mode reports only averages): %q", line, text)
			}
			inTable = true
			continue
		}
		if !inTable || text == "" || strings.HasPrefix(text, "---") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 9 {
			return nil, fmt.Errorf("line %d: want 9 columns after the latency header, got %d: %q", line, len(f), text)
		}
		var l Latency
		var err error
		if l.Bytes, err = strconv.Atoi(f[0]); err != nil {
			return nil, fmt.Errorf("line %d: #bytes %q: %w", line, f[0], err)
		}
		if l.Iterations, err = strconv.Atoi(f[1]); err != nil {
			return nil, fmt.Errorf("line %d: #iterations %q: %w", line, f[1], err)
		}
		for i, dst := range []*float64{&l.Min, &l.Max, &l.Typical, &l.Avg, &l.Stdev, &l.P99, &l.P999} {
			if *dst, err = parseFloat(f[i+2]); err != nil {
				return nil, fmt.Errorf("line %d: column %d %q: %w", line, i+3, f[i+2], err)
			}
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no latency result in the report (did the test run to the end?)")
	}
	return out, nil
}

// Bandwidth is one result row of a perftest bandwidth report
// (ib_write_bw, ib_read_bw, ib_send_bw). perftest's "MB/sec" is MiB/s
// (2^20 bytes), unless --report_gbits made it Gb/s.
type Bandwidth struct {
	Bytes       int
	Iterations  int     // over all QPs
	PeakMiBps   float64 // perftest's "BW peak[MB/sec]"
	AvgMiBps    float64 // perftest's "BW average[MB/sec]"
	MsgRateMpps float64
}

// BytesPerSecond is the average in bytes per second.
func (b Bandwidth) BytesPerSecond() float64 { return b.AvgMiBps * (1 << 20) }

// ParseBandwidth reads the result rows of a bandwidth report in MB/sec.
func ParseBandwidth(r io.Reader) ([]Bandwidth, error) {
	sc := bufio.NewScanner(r)
	var out []Bandwidth
	inTable := false
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#bytes") && strings.Contains(text, "BW peak") {
			if !strings.Contains(text, "[MB/sec]") {
				return nil, fmt.Errorf("line %d: bandwidth header without [MB/sec] (run without --report_gbits): %q", line, text)
			}
			inTable = true
			continue
		}
		if !inTable || text == "" || strings.HasPrefix(text, "---") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d: want 5 columns after the bandwidth header, got %d: %q", line, len(f), text)
		}
		var b Bandwidth
		var err error
		if b.Bytes, err = strconv.Atoi(f[0]); err != nil {
			return nil, fmt.Errorf("line %d: #bytes %q: %w", line, f[0], err)
		}
		if b.Iterations, err = strconv.Atoi(f[1]); err != nil {
			return nil, fmt.Errorf("line %d: #iterations %q: %w", line, f[1], err)
		}
		for i, dst := range []*float64{&b.PeakMiBps, &b.AvgMiBps, &b.MsgRateMpps} {
			if *dst, err = parseFloat(f[i+2]); err != nil {
				return nil, fmt.Errorf("line %d: column %d %q: %w", line, i+3, f[i+2], err)
			}
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no bandwidth result in the report (did the test run to the end?)")
	}
	return out, nil
}

// parseFloat reads a perftest number. perftest prints with C's printf,
// which writes a NaN (a standard deviation over one sample, a rate over
// no time) as "-nan" or "nan"; Go's ParseFloat takes only the unsigned
// spelling.
func parseFloat(s string) (float64, error) {
	if strings.EqualFold(strings.TrimLeft(s, "+-"), "nan") {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}
