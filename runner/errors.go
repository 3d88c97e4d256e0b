package runner

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a scenario file, placed where an editor can jump
// to it.
type Error struct {
	File   string // "" for settings that came from flags
	Line   int    // 1-based; 0 when the problem has no place in the file
	Column int
	Key    string // the key whose value is wrong, e.g. "sizes"; may be empty
	Msg    string // what is wrong; what is allowed
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	// The YAML parser places syntax errors by line only.
	if e.Line > 0 && e.Column > 0 {
		fmt.Fprintf(&b, ":%d", e.Column)
	}
	// A problem in flags (Single) has no file to name.
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList holds every problem found in one file, so that one run of
// `rdmarun validate` shows them all instead of one per edit.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual errors.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// maxErrors bounds the list: past a handful, later errors are usually
// echoes of earlier ones and bury them.
const maxErrors = 10

// suggest returns the known names closest to s, when they are close enough
// to be a typo rather than a different word.
func suggest(s string, known []string) []string {
	best := -1
	var out []string
	for _, k := range known {
		d := editDistance(strings.ToLower(s), strings.ToLower(k))
		// One edit in three letters is still recognisably the same word.
		if d > max(1, len(k)/3) {
			continue
		}
		switch {
		case best < 0 || d < best:
			best, out = d, []string{k}
		case d == best:
			out = append(out, k)
		}
	}
	return out
}

// didYouMean phrases the suggestions for s, quoted when quote is set, or
// returns "" when nothing is close.
func didYouMean(s string, known []string, quote bool) string {
	names := suggest(s, known)
	if len(names) == 0 {
		return ""
	}
	for i, n := range names {
		if quote {
			names[i] = fmt.Sprintf("%q", n)
		}
	}
	return "did you mean " + orList(names) + "?"
}

// orList joins "a", "a or b", "a, b or c".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// editDistance is the Levenshtein distance, with a transposition counting
// as one edit because swapped letters are the commonest typo.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// sortedKeys lists a map's keys in order, for messages that must not
// change from run to run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
