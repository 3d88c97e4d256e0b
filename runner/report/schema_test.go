package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema loads schema.json, the documented layout of the JSON
// report.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // date-time fields must hold dates, not only strings
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	return s
}

// ValidateJSON checks a JSON report against schema.json.
func validateJSON(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

func TestJSONMatchesSchema(t *testing.T) {
	s := compileSchema(t)
	var b bytes.Buffer
	if err := JSON(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(t, s, b.Bytes()); err != nil {
		t.Fatalf("the JSON report does not match schema.json:\n%v", err)
	}
	// The schema must notice an undocumented field and a wrong type.
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["surprise"] = 1
	bad, _ := json.Marshal(doc)
	if err := validateJSON(t, s, bad); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Errorf("an undocumented field passed: %v", err)
	}
	delete(doc, "surprise")
	doc["stop_reason"] = "bored"
	bad, _ = json.Marshal(doc)
	if err := validateJSON(t, s, bad); err == nil || !strings.Contains(err.Error(), "stop_reason") {
		t.Errorf("an unknown stop_reason passed: %v", err)
	}
	doc["stop_reason"] = string(StopAbortOnFail)
	doc["runs"].([]any)[0].(map[string]any)["status"] = "great"
	bad, _ = json.Marshal(doc)
	if err := validateJSON(t, s, bad); err == nil {
		t.Error("an unknown status passed")
	}
}

// TestSchemaOnFile validates a report written by a real run, when one is
// named in REPORT_JSON (the testbed's end-to-end test and make demo leave
// one).
func TestSchemaOnFile(t *testing.T) {
	path := os.Getenv("REPORT_JSON")
	if path == "" {
		t.Skip("REPORT_JSON not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(t, compileSchema(t), data); err != nil {
		t.Fatalf("%s does not match schema.json:\n%v", path, err)
	}
}
