package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

type pair struct{ k, v *yaml.Node }

// pairs reads a mapping, reporting keys that are unknown or given twice.
// It returns nil when n is not a mapping.
func (l *loader) pairs(n *yaml.Node, key string, known []string) map[string]*pair {
	n = yamlerr.Resolve(n)
	if n.Kind != yaml.MappingNode {
		keys := strings.Join(known, ", ")
		if len(known) > 6 {
			keys = strings.Join(known[:6], ", ") + ", ..."
		}
		l.errorf(n, key, "want a mapping of keys (%s), not %s", keys, yamlerr.Describe(n))
		return nil
	}
	out := map[string]*pair{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := yamlerr.Resolve(n.Content[i]), n.Content[i+1]
		name := k.Value
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, key, "a key must be a name, not %s", yamlerr.Describe(k))
			continue
		}
		if !contains(known, name) {
			if s := yamlerr.DidYouMean(name, known, true); s != "" {
				l.errorf(k, "", "unknown key %q; %s", name, s)
			} else {
				l.errorf(k, "", "unknown key %q; allowed here: %s", name, strings.Join(known, ", "))
			}
			continue
		}
		if first, dup := out[name]; dup {
			l.errorf(k, name, "given twice (first at line %d); keep one", first.k.Line)
			continue
		}
		out[name] = &pair{k, v}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scalar reads a single value with its variables substituted. An empty
// value is an error, saying what is allowed.
func (l *loader) scalar(n *yaml.Node, key, allowed string) (string, bool) {
	n = yamlerr.Resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		l.errorf(n, key, "want a single value, not %s; %s", yamlerr.Describe(n), allowed)
		return "", false
	}
	return l.substitute(n, key, n.Value)
}

func (l *loader) scalarAllowEmpty(n *yaml.Node, key string) (string, bool) {
	n = yamlerr.Resolve(n)
	if n.Tag == "!!null" {
		return "", true
	}
	return l.scalar(n, key, "write text")
}

// text reads a non-empty string.
func (l *loader) text(n *yaml.Node, key, allowed string) (string, bool) {
	s, ok := l.scalar(n, key, allowed)
	if ok && strings.TrimSpace(s) == "" {
		l.errorf(yamlerr.Resolve(n), key, "empty; %s", allowed)
		return "", false
	}
	return s, ok
}

func (l *loader) int(n *yaml.Node, key string, lo, hi int, allowed string) (int, bool) {
	s, ok := l.scalar(n, key, allowed)
	if !ok {
		return 0, false
	}
	return l.intValue(yamlerr.Resolve(n), key, s, lo, hi, allowed)
}

func (l *loader) intValue(n *yaml.Node, key, s string, lo, hi int, allowed string) (int, bool) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		l.errorf(n, key, "%q is not a whole number; %s", s, allowed)
		return 0, false
	}
	if v < lo || v > hi {
		l.errorf(n, key, "%d is out of range; %s", v, allowed)
		return 0, false
	}
	return v, true
}

func (l *loader) bool(n *yaml.Node, key string) (bool, bool) {
	s, ok := l.scalar(n, key, "write true or false")
	if !ok {
		return false, false
	}
	switch strings.ToLower(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	l.errorf(yamlerr.Resolve(n), key, "%q is not true or false; write true or false", s)
	return false, false
}

// items reads a value that may be one item or a list of them. A single
// value holding commas is a list too, so that one variable (--set
// sizes=2,64,4KiB) can stand for a whole sweep.
func (l *loader) items(n *yaml.Node, key, allowed string) ([]item, bool) {
	n = yamlerr.Resolve(n)
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			l.errorf(n, key, "empty list; %s", allowed)
			return nil, false
		}
		var out []item
		ok := true
		for _, c := range n.Content {
			s, good := l.scalar(c, key, allowed)
			ok = ok && good
			if good {
				out = append(out, item{yamlerr.Resolve(c), strings.TrimSpace(s)})
			}
		}
		return out, ok
	case yaml.ScalarNode:
		s, ok := l.scalar(n, key, allowed)
		if !ok {
			return nil, false
		}
		var out []item
		for _, part := range strings.Split(s, ",") {
			out = append(out, item{n, strings.TrimSpace(part)})
		}
		return out, true
	}
	l.errorf(n, key, "want a value or a list, not %s; %s", yamlerr.Describe(n), allowed)
	return nil, false
}

type item struct {
	n *yaml.Node
	s string
}

// oneOrBoth reads key's value, or a list of them, each a name parse
// knows or "both", which stands for both's two values in that order. A
// value listed twice, by itself or within both, is an error naming it,
// as a repeated size, QP count, host or device is: the second listing
// would only run the same tests again.
func oneOrBoth[T interface {
	comparable
	fmt.Stringer
}](l *loader, v *yaml.Node, key, allowed string, both [2]T, parse func(string) (T, error)) []T {
	its, ok := l.items(v, key, allowed)
	if !ok {
		return nil
	}
	var out []T
	viaBoth := map[T]bool{} // the values that came in with both
	for _, it := range its {
		vals := both[:]
		if it.s != "both" {
			m, err := parse(it.s)
			if err != nil {
				l.errorf(it.n, key, "%q is not a %s; %s%s", it.s, key, allowed, hint(it.s, []string{both[0].String(), both[1].String(), "both"}))
				return nil
			}
			vals = []T{m}
		}
		for _, m := range vals {
			if slices.Contains(out, m) {
				why := ""
				if it.s == "both" || viaBoth[m] {
					why = fmt.Sprintf(" (both is %s and %s)", both[0], both[1])
				}
				l.errorf(it.n, key, "%s is listed twice%s; list each %s once", m, why, key)
				return nil
			}
			out = append(out, m)
			viaBoth[m] = it.s == "both"
		}
	}
	return out
}
