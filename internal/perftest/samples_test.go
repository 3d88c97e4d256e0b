package perftest

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseSamplesReport(t *testing.T) {
	b, err := os.ReadFile("testdata/ib_write_lat_unsorted.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSamples(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1610.52, 125.151, 81.3637, 73.4939, 70.383, 67.6177, 74.3253, 69.4412, 272.745, 95.8161, 158.434}
	if !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestParseSamplesErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "no per-iteration latencies in the report (run the latency tool with -U)"},
		{"#, usec\n---\n", "no per-iteration latencies in the report (run the latency tool with -U)"},
		{"#, usec\n1 2.5\n", `line 2: want "iteration, usec" in the per-iteration list, got "1 2.5"`},
		{"#, usec\n1, 2.5\n3, 4\n", "line 3: iteration 3, want 2 (the list is in order from 1)"},
		{"#, usec\nx, 2.5\n", `line 2: iteration "x": strconv.Atoi: parsing "x": invalid syntax`},
		{"#, usec\n1, fast\n", `line 2: latency " fast": strconv.ParseFloat: parsing "fast": invalid syntax`},
		{"#, usec\n1, 2\n---\n#, usec\n1, 2\n", "line 4: a second per-iteration list (one test per report)"},
	} {
		_, err := ParseSamples(strings.NewReader(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("input %q:\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

func FuzzParseSamples(f *testing.F) {
	b, err := os.ReadFile("testdata/ib_write_lat_unsorted.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("#, usec\n1, 2\n2, -nan\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSamples(strings.NewReader(s))
		if err == nil && len(got) == 0 {
			t.Fatal("no error and no samples")
		}
	})
}
