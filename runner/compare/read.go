package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rdmarun/rdmarun/runner/report"
)

// maxReport bounds what Read takes into memory: a report of a 6-host
// fleet is a few hundred KB, so this is far beyond any real one.
const maxReport = 1 << 30

// Read loads a report that rdmarun wrote with --json, saying what is
// wrong with anything else: not JSON, cut short, another tool's file.
func Read(file string) (*report.Report, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReport+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > maxReport {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a report", file, maxReport)
	}
	return Parse(file, data)
}

// Parse decodes a report from data; file names it in errors.
func Parse(file string, data []byte) (*report.Report, error) {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, decodeError(file, data, err)
	}
	if !strings.HasPrefix(head.Schema, "rdmarun.report/") {
		return nil, fmt.Errorf("%s: not an rdmarun report (schema %q); write one with rdmarun --json FILE", file, head.Schema)
	}
	if head.Schema != report.Schema {
		return nil, fmt.Errorf("%s: %w: it is %s, this rdmarun reads %s; rerun the scenario with this release", file, ErrSchema, head.Schema, report.Schema)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, decodeError(file, data, err)
	}
	for i, run := range rep.Runs {
		if err := checkSamples(run); err != nil {
			return nil, fmt.Errorf("%s: run %d (case %q): %w", file, i, run.Case, err)
		}
	}
	return &rep, nil
}

// maxSamples is more round trips than a run records (a day at 10 ns).
const maxSamples = 1 << 43

// checkSamples refuses latency samples that disagree with the run's own
// summary: resampling them would judge numbers the run never measured.
func checkSamples(run report.Run) error {
	if run.Result == nil || run.Result.Latency == nil || len(run.Result.Latency.Buckets) == 0 {
		return nil
	}
	var n uint64
	for _, b := range run.Result.Latency.Buckets {
		if b.Count > maxSamples || n+b.Count > maxSamples {
			return fmt.Errorf("latency buckets count more than %d samples", uint64(maxSamples))
		}
		n += b.Count
	}
	if want := run.Result.Latency.RTT.Count; n != uint64(want) {
		return fmt.Errorf("latency buckets hold %d samples, the RTT summary %d", n, want)
	}
	return nil
}

// decodeError places a JSON error at line:column where it has an offset.
func decodeError(file string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected end of JSON input"):
		return fmt.Errorf("%s: cut short after %d bytes (was the run interrupted while writing it?)", file, len(data))
	case errors.As(err, &syn):
		l, c := position(data, syn.Offset-1) // Offset is past the bad byte
		return fmt.Errorf("%s:%d:%d: not JSON: %v", file, l, c, err)
	case errors.As(err, &typ):
		l, c := position(data, typ.Offset)
		return fmt.Errorf("%s:%d:%d: %s is %s, want %s; not a report this rdmarun wrote", file, l, c, typ.Field, typ.Value, typ.Type)
	}
	return fmt.Errorf("%s: %w", file, err)
}

func position(data []byte, offset int64) (line, col int) {
	before := data[:min(int(offset), len(data))]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, len(before) - bytes.LastIndexByte(before, '\n')
}
