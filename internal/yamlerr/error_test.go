package yamlerr

import "testing"

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "f.yml", Line: 7, Column: 11, Key: "mesh.labels", Msg: "m"}, "f.yml:7:11: mesh.labels: m"},
		{Error{File: "f.yml", Line: 7, Msg: "m"}, "f.yml:7: m"},
		{Error{File: "f.yml", Msg: "m"}, "f.yml: m"},
		{Error{Line: 7, Column: 11, Key: "k", Msg: "m"}, "7:11: k: m"},
		{Error{Key: "--size", Msg: "m"}, "--size: m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	known := []string{"max_targets", "rotate", "source", "labels", "always", "max_probes_per_second"}
	for _, tc := range []struct{ in, want string }{
		{"max_target", `did you mean "max_targets"?`},
		{"roatte", `did you mean "rotate"?`}, // a transposition is one edit
		{"Labels", `did you mean "labels"?`},
		{"zzzz", ""},
	} {
		if got := DidYouMean(tc.in, known, true); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := DidYouMean("p98", []string{"p90", "p99", "p999"}, false); got != "did you mean p90 or p99?" {
		t.Errorf("two equally close: %q", got)
	}
}
