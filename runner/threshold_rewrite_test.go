package runner

import "testing"

func TestRewriteDurations(t *testing.T) {
	for in, want := range map[string]string{
		"p99 < 5us":                   "p99 < 5",
		"p99 < 5µs":                   "p99 < 5",
		"p99<1.5ms":                   "p99<1500",
		"p50 > 100ns":                 "p50 > 0.1",
		"max < 2s":                    "max < 2000000",
		"p999 < 1_000ns":              "p999 < 1",
		"p9999 < 0.25us":              "p9999 < 0.25",
		"p99 < 5":                     "p99 < 5",
		"p99 < 5sec":                  "p99 < 5sec", // not a unit: the compiler reports it
		"p99 < 5 us":                  "p99 < 5 us",
		`mode == "5us" && p99 < 3us`:  `mode == "5us" && p99 < 3`,
		`op == 'x\'5s' || p90 < 1ms`:  `op == 'x\'5s' || p90 < 1000`,
		"1e3 > p50":                   "1e3 > p50",
		"p99s < 1":                    "p99s < 1",
		`counter("x5s") == 0`:         `counter("x5s") == 0`,
		"`raw 5s` == op":              "`raw 5s` == op",
		"size >= 4096 && p99 < 2.5ms": "size >= 4096 && p99 < 2500",
		"size >= 4KiB && size < 1MB":  "size >= 4096 && size < 1000000",
		"size == 64B || size > 1GiB":  "size == 64 || size > 1073741824",
		"size < 1.5KiB":               "size < 1536",
	} {
		if got := rewriteDurations(in); got != want {
			t.Errorf("rewriteDurations(%q) = %q, want %q", in, got, want)
		}
	}
}
