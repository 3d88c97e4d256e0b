package main

import (
	"bytes"
	"testing"
)

// The progress line rewrites itself only on a terminal whose TERM
// renders escapes, outside CI.
func TestRewritesLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		tty  bool
		env  map[string]string
		want bool
	}{
		{"a terminal", true, map[string]string{"TERM": "xterm-256color"}, true},
		{"a terminal, TERM dumb", true, map[string]string{"TERM": "dumb"}, false},
		{"a terminal, TERM unset", true, map[string]string{}, false},
		{"a terminal, TERM empty", true, map[string]string{"TERM": ""}, false},
		{"a terminal in CI", true, map[string]string{"TERM": "xterm", "CI": "true"}, false},
		{"a terminal, CI set to anything", true, map[string]string{"TERM": "xterm", "CI": "0"}, false},
		{"a terminal, CI empty", true, map[string]string{"TERM": "xterm", "CI": ""}, true},
		{"not a terminal", false, map[string]string{"TERM": "xterm-256color"}, false},
		{"not a terminal, TERM dumb", false, map[string]string{"TERM": "dumb"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rewritesLines(tc.tty, func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("rewritesLines(%v, %v) = %v, want %v", tc.tty, tc.env, got, tc.want)
			}
		})
	}
}

// A writer that is no file is no terminal, whatever TERM says.
func TestLiveLineNotAFile(t *testing.T) {
	if liveLine(&bytes.Buffer{}, func(string) string { return "xterm" }) {
		t.Error("a bytes.Buffer counts as a terminal")
	}
}
