package yamlerr

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Resolve follows an alias (*name) to the node it stands for.
func Resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// Describe names what a node holds, for the "not ..." half of a message:
// the value itself when it is one, so the reader sees what was written.
func Describe(n *yaml.Node) string {
	n = Resolve(n)
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// IsNull reports whether n holds no value (an empty value, ~ or null).
func IsNull(n *yaml.Node) bool {
	n = Resolve(n)
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Keys names a mapping by the keys it may hold, the first few of them
// when there are many.
func Keys(known []string) string {
	keys := strings.Join(known, ", ")
	if len(known) > 6 {
		keys = strings.Join(known[:6], ", ") + ", ..."
	}
	return "a mapping of keys (" + keys + ")"
}

// UnknownKey says that name is not one of the known keys of its mapping,
// and which one was probably meant.
func UnknownKey(name string, known []string) string {
	if s := DidYouMean(name, known, true); s != "" {
		return fmt.Sprintf("unknown key %q; %s", name, s)
	}
	return fmt.Sprintf("unknown key %q; allowed here: %s", name, strings.Join(known, ", "))
}

// Suggest returns the known names closest to s, when they are close enough
// to be a typo rather than a different word.
func Suggest(s string, known []string) []string {
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

// DidYouMean phrases the suggestions for s, quoted when quote is set, or
// returns "" when nothing is close.
func DidYouMean(s string, known []string, quote bool) string {
	names := Suggest(s, known)
	if len(names) == 0 {
		return ""
	}
	for i, n := range names {
		if quote {
			names[i] = fmt.Sprintf("%q", n)
		}
	}
	return "did you mean " + OrList(names) + "?"
}

// OrList joins "a", "a or b", "a, b or c".
func OrList(items []string) string {
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
