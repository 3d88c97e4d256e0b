package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// RunsSchema names the layout of a runs file (--runs): JSON Lines, a
// RunsHeader on the first line, then one Run per line, each marshalled
// as in the report's runs array so that readers of either share Run.
const RunsSchema = "rdmarun.runs/v1"

// RunsHeader is a runs file's first line: which scenario the runs that
// follow belong to. Its fields are the report's of the same names.
type RunsHeader struct {
	Schema   string    `json:"schema"`
	Tool     string    `json:"tool"`
	Scenario string    `json:"scenario"`
	File     string    `json:"file,omitempty"`
	Started  time.Time `json:"started"`
}

// RunsWriter streams finished runs as they end, so that a crash or
// Ctrl-C of the process still leaves every run that finished before it.
//
// Each line goes out in one Write of one buffer: a reader never sees two
// runs interleaved, and a crash can cut only the last line. There is no
// fsync per line: what survives a crash of the process is what reached
// the kernel, which every written line has; an fsync would only add a
// disk flush per run (many a second in a large fleet) against a power
// loss, which the caller can cover by syncing when it closes the file.
type RunsWriter struct {
	w io.Writer
}

// NewRunsWriter writes the header for rep (its schema, tool, scenario,
// file and start) to w; Write then adds the runs.
func NewRunsWriter(w io.Writer, rep *Report) (*RunsWriter, error) {
	h := RunsHeader{Schema: RunsSchema, Tool: rep.Tool, Scenario: rep.Scenario, File: rep.File, Started: rep.Started}
	rw := &RunsWriter{w: w}
	if err := rw.line(h); err != nil {
		return nil, err
	}
	return rw, nil
}

// AppendRunsWriter adds runs to a runs file whose header w already holds:
// a resumed run's, so that the file can be resumed again.
func AppendRunsWriter(w io.Writer) *RunsWriter { return &RunsWriter{w: w} }

// Write appends one finished run.
func (rw *RunsWriter) Write(r *Run) error { return rw.line(r) }

func (rw *RunsWriter) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = rw.w.Write(append(b, '\n'))
	return err
}

// ErrTruncated is wrapped by ReadRuns' error when the last line ends
// without a newline and is not a whole run: what a writer stopped
// mid-line (a crash, a full disk) leaves. The runs before it are whole.
var ErrTruncated = errors.New("truncated")

// ReadRuns reads a runs file: its header and its runs in the order they
// finished. On an error it returns the header and the runs read before
// the line at fault, and the error names that line; a truncated last
// line's error wraps ErrTruncated, so a reader of a crashed run's file
// can keep the runs before it.
func ReadRuns(r io.Reader) (RunsHeader, []Run, error) {
	var h RunsHeader
	var runs []Run
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return h, runs, fmt.Errorf("line %d: %w", n, err)
		}
		last := err != nil // io.EOF: no newline ended this line
		if last && len(line) == 0 {
			if n == 1 {
				return h, nil, errors.New("line 1: empty file: a runs file starts with its header line, {\"schema\": \"" + RunsSchema + "\", ...}")
			}
			return h, runs, nil
		}
		body := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		var perr error
		if n == 1 {
			perr = readHeader(body, &h)
		} else {
			var run Run
			if perr = decodeLine(body, &run); perr == nil {
				perr = checkRun(&run)
			}
			if perr == nil {
				runs = append(runs, run)
			}
		}
		if perr != nil {
			if last {
				// A cut-off prefix of a JSON object is never a syntax
				// error, only an unexpected end.
				if errors.Is(perr, io.ErrUnexpectedEOF) {
					return h, runs, fmt.Errorf("line %d: %w: the last line ends mid-run, without a newline, as a writer stopped by a crash leaves it; the %d runs before it are whole", n, ErrTruncated, len(runs))
				}
			}
			return h, runs, fmt.Errorf("line %d:%w", n, perr)
		}
		if last {
			return h, runs, nil
		}
	}
}

func readHeader(body []byte, h *RunsHeader) error {
	if err := decodeLine(body, h); err != nil {
		return err
	}
	if h.Schema != RunsSchema {
		return fmt.Errorf(" schema is %q, want %q: this is not a runs file, or one of a version this rdmarun does not read", h.Schema, RunsSchema)
	}
	return nil
}

// decodeLine decodes one line strictly: an unknown field is an error, so
// a misspelt or newer file is not read as if it said less. Its error
// starts with the column where it can name one.
func decodeLine(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New(" empty line: each line holds one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%d: not JSON: %w", syn.Offset, err)
	case errors.As(err, &typ):
		return fmt.Errorf("%d: %s: %w", typ.Offset, typ.Field, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf(" not JSON: %w", err)
	case err != nil:
		return fmt.Errorf(" %w", err)
	}
	if dec.More() {
		return fmt.Errorf("%d: more than one JSON value on the line", dec.InputOffset()+1)
	}
	return nil
}

func checkRun(r *Run) error {
	switch r.Status {
	case Passed, Failed, Errored, Skipped:
	default:
		return fmt.Errorf(" status %q: want one of %s", r.Status, strings.Join([]string{string(Passed), string(Failed), string(Errored), string(Skipped)}, ", "))
	}
	if r.Case == "" {
		return errors.New(" case is missing: a run line names its case")
	}
	return nil
}
