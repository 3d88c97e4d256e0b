package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmarun/rdmarun/internal/schematest"
)

// runsSchema compiles runs.schema.json, which refers to schema.json for
// a run.
func runsSchema(t *testing.T) *jsonschema.Schema {
	return schematest.Compile(t, "runs.schema.json", "schema.json")
}

// TestRunsRoundTrip: every run of the fixture, written line by line,
// reads back as the report's runs marshal, and every line is one the
// schema documents.
func TestRunsRoundTrip(t *testing.T) {
	rep := fixture()
	var b bytes.Buffer
	w, err := NewRunsWriter(&b, rep)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rep.Runs {
		if err := w.Write(&rep.Runs[i]); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(rep.Runs)+1 {
		t.Fatalf("%d lines for %d runs, want a header and a line a run", len(lines), len(rep.Runs))
	}
	s := runsSchema(t)
	for i, l := range lines {
		if err := schematest.Validate(t, s, []byte(l)); err != nil {
			t.Errorf("line %d does not match runs.schema.json:\n%v", i+1, err)
		}
	}
	h, runs, err := ReadRuns(&b)
	if err != nil {
		t.Fatal(err)
	}
	want := RunsHeader{Schema: RunsSchema, Tool: rep.Tool, Scenario: rep.Scenario, File: rep.File, Started: rep.Started}
	if !h.Started.Equal(want.Started) || h.Schema != want.Schema || h.Tool != want.Tool || h.Scenario != want.Scenario || h.File != want.File {
		t.Errorf("header %+v, want %+v", h, want)
	}
	if got, want := mustJSON(t, runs), mustJSON(t, rep.Runs); got != want {
		t.Errorf("runs read back differ from the report's:\ngot  %s\nwant %s", got, want)
	}
}

// TestRunsSchemaRejects: the schema notices a line that is neither a
// header nor a run.
func TestRunsSchemaRejects(t *testing.T) {
	s := runsSchema(t)
	for _, line := range []string{
		`{"schema":"rdmarun.runs/v2","tool":"t","scenario":"s","started":"2026-01-02T03:04:05Z"}`,
		`{"schema":"rdmarun.runs/v1","tool":"t","scenario":"s"}`,
		`{"case":"lat","index":0,"status":"great","spec":{},"seconds":1}`,
		`{"case":"lat","index":0,"status":"passed","spec":{},"seconds":1,"surprise":1}`,
	} {
		if err := schematest.Validate(t, s, []byte(line)); err == nil {
			t.Errorf("passed the schema: %s", line)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadRuns reads each file of testdata/runs: how many runs come back
// and what the error says, a truncated last line told apart from the
// other faults.
func TestReadRuns(t *testing.T) {
	for _, tc := range []struct {
		file      string
		runs      int
		err       string // a substring of the error; "" for none
		truncated bool
	}{
		{file: "ok.jsonl", runs: 2},
		{file: "header-only.jsonl", runs: 0},
		{file: "no-final-newline.jsonl", runs: 2},
		{file: "crlf.jsonl", runs: 1},
		{file: "truncated.jsonl", runs: 1, err: "line 3: truncated: the last line ends mid-run", truncated: true},
		{file: "truncated-header.jsonl", runs: 0, err: "line 1: truncated", truncated: true},
		{file: "garbage-last.jsonl", runs: 0, err: "line 2:14: not JSON"},
		{file: "empty.jsonl", runs: 0, err: "line 1: empty file"},
		{file: "not-json.jsonl", runs: 1, err: "line 3:2: not JSON"},
		{file: "wrong-schema.jsonl", runs: 0, err: `line 1: schema is "rdmarun.report/v4", want "rdmarun.runs/v1"`},
		{file: "blank-line.jsonl", runs: 1, err: "line 3: empty line"},
		{file: "bad-status.jsonl", runs: 0, err: `line 2: status "great": want one of passed, failed, error, skipped`},
		{file: "unknown-field.jsonl", runs: 0, err: `line 2: json: unknown field "surprise"`},
		{file: "wrong-type.jsonl", runs: 0, err: "line 2:28: index:"},
		{file: "two-values.jsonl", runs: 0, err: "line 2:101: more than one JSON value"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "runs", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, runs, err := ReadRuns(f)
			if len(runs) != tc.runs {
				t.Errorf("%d runs, want %d", len(runs), tc.runs)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one with %q", err, tc.err)
			}
			if got := errors.Is(err, ErrTruncated); got != tc.truncated {
				t.Errorf("errors.Is(err, ErrTruncated) = %v, want %v (err %v)", got, tc.truncated, err)
			}
		})
	}
}

// TestRunsWriterError: a writer's error comes back from Write, for the
// caller to tell.
func TestRunsWriterError(t *testing.T) {
	if _, err := NewRunsWriter(failingWriter{}, &Report{Started: time.Now()}); err == nil {
		t.Error("a failed header write returned no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// FuzzReadRuns: no input panics ReadRuns, and runs it accepts write back
// to a file it reads as the same runs.
func FuzzReadRuns(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "runs", "*.jsonl"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, runs, err := ReadRuns(bytes.NewReader(data))
		if err != nil {
			return
		}
		// A spec is completed with its defaults when decoded (rdma.Test),
		// so the first rewrite may fill them in; after it, a rewrite
		// changes nothing.
		h2, again := rewrite(t, h, runs)
		if h2.Scenario != h.Scenario || h2.Tool != h.Tool || h2.File != h.File || !h2.Started.Equal(h.Started) {
			t.Errorf("header %+v read back as %+v", h, h2)
		}
		if len(again) != len(runs) {
			t.Fatalf("%d runs read back as %d", len(runs), len(again))
		}
		_, third := rewrite(t, h2, again)
		if a, b := mustJSON(t, again), mustJSON(t, third); a != b {
			t.Errorf("runs changed on a round trip:\n%s\n%s", a, b)
		}
	})
}

// rewrite writes h and runs as a runs file and reads it back.
func rewrite(t *testing.T, h RunsHeader, runs []Run) (RunsHeader, []Run) {
	t.Helper()
	var b bytes.Buffer
	w, err := NewRunsWriter(&b, &Report{Tool: h.Tool, Scenario: h.Scenario, File: h.File, Started: h.Started})
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if err := w.Write(&runs[i]); err != nil {
			t.Fatal(err)
		}
	}
	h2, again, err := ReadRuns(&b)
	if err != nil {
		t.Fatalf("runs it read do not read back: %v\n%s", err, b.String())
	}
	return h2, again
}
