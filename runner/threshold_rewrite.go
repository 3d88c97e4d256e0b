package runner

import (
	"math"
	"strconv"
	"strings"
)

// rewriteDurations turns duration literals into microseconds and size
// literals into bytes, outside string literals: "p99 < 1.5ms" becomes
// "p99 < 1500", "size >= 4KiB" "size >= 4096". Digits inside a name (p99)
// are not literals.
func rewriteDurations(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := skipString(src, i)
			b.WriteString(src[i:j])
			i = j
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			b.WriteString(src[i:j])
			i = j
		case isDigit(c):
			j := i
			for j < len(src) && (isDigit(src[j]) || src[j] == '_') {
				j++
			}
			if j+1 < len(src) && src[j] == '.' && isDigit(src[j+1]) {
				j++
				for j < len(src) && (isDigit(src[j]) || src[j] == '_') {
					j++
				}
			}
			if us, end, ok := durationLiteral(src, i, j); ok {
				b.WriteString(us)
				i = end
				continue
			}
			b.WriteString(src[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// literalUnits are the units a number in a condition may carry: durations
// become microseconds, the unit of the latency names, and sizes bytes,
// the unit of size.
var literalUnits = []struct {
	suffix string
	scale  float64 // multiply by it; 0: divide by 1000 (exact for ns)
}{
	{"ns", 0}, {"us", 1}, {"µs", 1}, {"ms", 1e3}, {"s", 1e6},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// durationLiteral reads a unit after the number src[start:end], and
// returns the value in microseconds or bytes and where the literal ends.
func durationLiteral(src string, start, end int) (string, int, bool) {
	for _, u := range literalUnits {
		if !strings.HasPrefix(src[end:], u.suffix) {
			continue
		}
		after := end + len(u.suffix)
		if after < len(src) && isIdentChar(src[after]) {
			return "", 0, false // 5sec, 5usx: not a duration
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(src[start:end], "_", ""), 64)
		if err != nil || math.IsInf(v, 0) {
			return "", 0, false
		}
		if u.scale == 0 {
			v /= 1e3
		} else {
			v *= u.scale
		}
		if math.IsInf(v, 0) {
			return "", 0, false
		}
		return strconv.FormatFloat(v, 'f', -1, 64), after, true
	}
	return "", 0, false
}

// skipString returns the index just past the string literal at i, or the
// end of src when it is not closed (the compiler then reports it).
func skipString(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(src)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c == '#' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }
