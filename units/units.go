// Package units parses and prints the byte sizes and rates that scenarios,
// flags and reports use. Binary prefixes (KiB, MiB) are powers of 1024 and
// decimal ones (KB, MB) powers of 1000; a bare number is bytes. Rates are
// printed as Gb/s (10^9 bit/s) and GiB/s, never the ambiguous "MB/s".
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var byteSuffixes = []struct {
	suffix string
	mult   uint64
}{
	// Longest first, so "KiB" is not read as "B" after "Ki".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// ParseBytes reads "64", "64B", "4KiB", "8MiB", "1GB". "K", "M" and "G"
// alone are binary, as in perftest and dd. The value must be a whole
// number of bytes.
func ParseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("size %q is empty; write a number of bytes such as 64 or 4KiB", s)
	}
	mult := uint64(1)
	for _, u := range byteSuffixes {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q is not a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)", s)
	}
	if n != 0 && mult > math.MaxUint64/n {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// FormatBytes prints n with the largest binary unit that divides it
// exactly: 4096 -> "4KiB", 100 -> "100B".
func FormatBytes(n uint64) string {
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

// Micros prints nanoseconds as microseconds with two decimals.
func Micros(ns float64) string {
	return strconv.FormatFloat(ns/1e3, 'f', 2, 64)
}
