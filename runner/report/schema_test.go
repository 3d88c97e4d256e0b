package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmarun/rdmarun/internal/schematest"
	"github.com/rdmarun/rdmarun/portstats"
)

// compileSchema loads schema.json, the documented layout of the JSON
// report.
func compileSchema(t *testing.T) *jsonschema.Schema { return schematest.Compile(t, "schema.json") }

func validateJSON(t *testing.T, s *jsonschema.Schema, data []byte) error {
	return schematest.Validate(t, s, data)
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
	// A category is one of the threshold names, not any counter's.
	run := doc["runs"].([]any)[0].(map[string]any)
	run["status"] = string(Passed)
	cats := run["result"].(map[string]any)["sides"].([]any)[0].(map[string]any)["counters"].(map[string]any)["categories"].(map[string]any)
	cats["values"].(map[string]any)["rx_prio3_pause"] = 1
	bad, _ = json.Marshal(doc)
	if err := validateJSON(t, s, bad); err == nil || !strings.Contains(err.Error(), "rx_prio3_pause") {
		t.Errorf("an unknown category passed: %v", err)
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

// The fixture's soft-RoCE sides have no pause; a ConnectX side has every
// category, ethtool statistics and pause per priority, all documented.
func TestCategoriesMatchSchema(t *testing.T) {
	r := fixture()
	ethtool := map[string]uint64{"rx_prio3_pause": 5, "tx_prio3_pause": 2, "rx_prio3_pause_duration": 600, "tx_prio3_pause_duration": 150, "rx_global_pause": 1, "tx_global_pause": 0}
	r.Runs[0].Result.Sides[0].Counters = portstats.Deltas{
		HWCounters: map[string]uint64{"np_cnp_sent": 40},
		Ethtool:    ethtool,
		Reset:      []string{"ethtool/tx_global_pause"},
		Categories: portstats.Categorize(portstats.Source{
			Driver: "mlx5_core", Netdev: "enp1s0f0", NetdevDriver: "mlx5_core",
			HWCounters: map[string]uint64{"np_cnp_sent": 40}, Ethtool: ethtool,
		}),
	}
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"priority": "link"`) || !strings.Contains(b.String(), `"rx_us": 600`) {
		t.Fatalf("the report lacks the pause per priority:\n%s", b.String())
	}
	if err := validateJSON(t, compileSchema(t), b.Bytes()); err != nil {
		t.Fatalf("the JSON report does not match schema.json:\n%v", err)
	}
}
