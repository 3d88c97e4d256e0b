package perftest

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// samplesHeader starts the per-iteration list that a latency tool prints
// when run with -U (--report-unsorted).
const samplesHeader = "#, usec"

// ParseSamples reads the per-iteration latencies of a latency report made
// with -U, in the order they were measured and in microseconds as perftest
// prints them (half the round trip for write and send, the whole round
// trip for read and atomics). perftest lists every round trip but the
// last, the first included; its summary row leaves the first out, so the
// list is where a run's first round trip can be seen.
func ParseSamples(r io.Reader) ([]float64, error) {
	sc := bufio.NewScanner(r)
	var out []float64
	inList := false
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == samplesHeader {
			if out != nil {
				return nil, fmt.Errorf("line %d: a second per-iteration list (one test per report)", line)
			}
			inList = true
			continue
		}
		if !inList {
			continue
		}
		if text == "" || strings.HasPrefix(text, "---") {
			inList = false
			continue
		}
		no, value, ok := strings.Cut(text, ",")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"iteration, usec\" in the per-iteration list, got %q", line, text)
		}
		n, err := strconv.Atoi(strings.TrimSpace(no))
		if err != nil {
			return nil, fmt.Errorf("line %d: iteration %q: %w", line, no, err)
		}
		if n != len(out)+1 {
			return nil, fmt.Errorf("line %d: iteration %d, want %d (the list is in order from 1)", line, n, len(out)+1)
		}
		v, err := parseFloat(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("line %d: latency %q: %w", line, value, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no per-iteration latencies in the report (run the latency tool with -U)")
	}
	return out, nil
}
