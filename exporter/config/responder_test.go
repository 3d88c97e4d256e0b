package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestResponderLimits: the limits come out in the responder's units,
// and every key a refusal names is a key of the responder's section.
func TestResponderLimits(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want Limits
	}{
		{"responder: {}\n", Limits{MaxConcurrent: 4, MaxMemory: 1 << 30, MaxQPs: 64, MaxTest: 10 * time.Minute}},
		{"responder: {max_concurrent: 8, max_memory: 256MiB, max_qps: 16, max_test: 2m}\n", Limits{MaxConcurrent: 8, MaxMemory: 256 << 20, MaxQPs: 16, MaxTest: 2 * time.Minute}},
	} {
		c, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.doc, err)
		}
		got := c.Responder.Limits()
		keys := got.Keys
		got.Keys = LimitKeys{}
		if got != tc.want {
			t.Errorf("Parse(%q) limits %+v, want %+v", tc.doc, got, tc.want)
		}
		yamlKeys := map[string]bool{}
		rt := reflect.TypeFor[Responder]()
		for i := range rt.NumField() {
			if tag := rt.Field(i).Tag.Get("yaml"); tag != "" {
				yamlKeys["responder."+strings.Split(tag, ",")[0]] = true
			}
		}
		kv := reflect.ValueOf(keys)
		for i := range kv.NumField() {
			if k := kv.Field(i).String(); !yamlKeys[k] {
				t.Errorf("LimitKeys.%s is %q, not a key of the responder's section", kv.Type().Field(i).Name, k)
			}
		}
	}
}
