package runner

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseVars reads vars: and applies the overrides. A variable's value is
// taken as written; it is not itself expanded.
func (l *loader) parseVars(root *yaml.Node, p *pair, overrides map[string]string) {
	l.vars = map[string]string{}
	at := root
	if p != nil {
		at = p.k
		n := yamlerr.Resolve(p.v)
		if n.Kind != yaml.MappingNode {
			l.errorf(n, "vars", "want a mapping of names to values, such as {iters: 10000}, not %s", yamlerr.Describe(n))
		} else {
			seen := map[string]*yaml.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := yamlerr.Resolve(n.Content[i]), yamlerr.Resolve(n.Content[i+1])
				name := k.Value
				if first, dup := seen[name]; dup {
					l.errorf(k, "vars", "variable %q is declared twice (first at line %d)", name, first.Line)
					continue
				}
				seen[name] = k
				if !varName.MatchString(name) {
					l.errorf(k, "vars", "%q is not a variable name; use letters, digits and _, not starting with a digit", name)
					continue
				}
				if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
					l.errorf(v, "vars", "variable %q wants a single value, not %s", name, yamlerr.Describe(v))
					continue
				}
				l.vars[name] = v.Value
			}
		}
	}
	for _, name := range sortedKeys(overrides) {
		if _, ok := l.vars[name]; !ok {
			msg := fmt.Sprintf("override %q names no variable of this scenario", name)
			if s := yamlerr.DidYouMean(name, sortedKeys(l.vars), true); s != "" {
				msg += "; " + s
			} else if len(l.vars) == 0 {
				msg += "; it declares none (add it under vars:)"
			} else {
				msg += "; declared: " + strings.Join(sortedKeys(l.vars), ", ")
			}
			l.errorf(at, "vars", "%s", msg)
			continue
		}
		l.vars[name] = overrides[name]
	}
}

// substitute replaces each ${name} in s with the variable's value.
func (l *loader) substitute(n *yaml.Node, key, s string) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			l.errorf(n, key, "%q has ${ without a closing }; write ${name}", n.Value)
			return "", false
		}
		name := s[i+2 : i+j]
		v, ok := l.vars[name]
		if !ok {
			msg := fmt.Sprintf("undefined variable %q", name)
			switch s := yamlerr.DidYouMean(name, sortedKeys(l.vars), true); {
			case s != "":
				msg += "; " + s
			case len(l.vars) == 0:
				msg += "; declare it under vars: (or override it)"
			default:
				msg += "; declared: " + strings.Join(sortedKeys(l.vars), ", ")
			}
			l.errorf(n, key, "%s", msg)
			return "", false
		}
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// A plain YAML scalar inside {...} or [...] may not hold braces, so
// `{iterations: ${iters}}` would not parse. Before parsing, each ${name}
// has its braces swapped for two private-use characters, one rune each so
// columns stay right; after parsing they are swapped back.
const (
	openVar  = "\uE000"
	closeVar = "\uE001"
)

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func protectVars(data []byte) []byte {
	return varRef.ReplaceAll(data, []byte("$$"+openVar+"${1}"+closeVar))
}

var unprotect = strings.NewReplacer("$"+openVar, "${", closeVar, "}")

// restoreVars undoes protectVars in every node. It follows Content, not
// aliases, so an alias that refers to its own ancestor cannot loop.
func restoreVars(n *yaml.Node) {
	if strings.Contains(n.Value, closeVar) {
		n.Value = unprotect.Replace(n.Value)
	}
	for _, c := range n.Content {
		restoreVars(c)
	}
}
