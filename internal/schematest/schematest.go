// Package schematest compiles the project's JSON schemas for tests, so
// every test checks output against the same documented layout.
package schematest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile loads the JSON schema at path; formats (date-time) are
// asserted, so a date field must hold a date, not only a string. The
// schemas at others are loaded beside it, for the references it makes to
// them by their $id.
func Compile(t testing.TB, path string, others ...string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, p := range append(others, path) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := c.AddResource(filepath.Base(p), doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(filepath.Base(path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// Validate checks JSON data against s.
func Validate(t testing.TB, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}
