package runner

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/rdma"
)

// maxRuns bounds a scenario's expansion: past it a matrix is a typo (a
// size range by 1.01) rather than a plan anyone can wait for.
const maxRuns = 10000

// Load reads and checks a scenario file. overrides replace the values of
// variables declared under vars: (from `--set NAME=VALUE`). Beyond Parse,
// it finds a fleet's hosts (reading a hostfile, looking a DNS name up
// within 10 s, expanding a Slurm node list) and plans their pairs.
// The error, when there is one, is an ErrorList.
func Load(path string, overrides map[string]string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	l := newLoader(path)
	sc := l.parse(data, overrides)
	dir := filepath.Dir(path)
	if l.c.Count() == 0 {
		l.resolveFleet(dir)
	}
	if err := l.result(); err != nil {
		return nil, err
	}
	rel := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	rel(&sc.TokenFile)
	if sc.TLS != nil {
		rel(&sc.TLS.CAFile)
		rel(&sc.TLS.CertFile)
		rel(&sc.TLS.KeyFile)
	}
	return sc, nil
}

// Parse checks a scenario held in memory; name is what errors call the
// file. It touches neither the network nor other files: a fleet whose
// hosts come from a hostfile, DNS or Slurm gets them from Load, and until
// then has no Hosts, Pairs or Rounds. The error, when there is one, is an
// ErrorList.
func Parse(name string, data []byte, overrides map[string]string) (*Scenario, error) {
	l := newLoader(name)
	sc := l.parse(data, overrides)
	if err := l.result(); err != nil {
		return nil, err
	}
	return sc, nil
}

// result is the problems found, in file order, or nil.
func (l *loader) result() error { return l.c.Err() }

type loader struct {
	file string
	c    yamlerr.Collector
	vars map[string]string
	// spelled, set when the values came from flags (Single), maps a key
	// to the flag that gave it: errors name that, and have no place.
	spelled map[string]string
	fleet   *fleetDraft // nil unless the file gives a fleet key
}

func newLoader(file string) *loader {
	return &loader{file: file, c: yamlerr.Collector{File: file}}
}

// errorf records a problem at n (nil: no place in the file).
func (l *loader) errorf(n *yaml.Node, key, format string, args ...any) {
	if l.spelled != nil {
		key = l.spelled[key] // "" for a key no flag gave, such as the case's own
	}
	l.c.At(n, key, format, args...)
}

func (l *loader) parse(data []byte, overrides map[string]string) *Scenario {
	root := yamlerr.Parse(&l.c, protectVars(data))
	if root == nil {
		if l.c.Count() == 0 {
			l.errorf(nil, "", "the file is empty; a scenario needs at least cases:")
		}
		return nil
	}
	restoreVars(root)
	root = yamlerr.Resolve(root)
	if root.Kind != yaml.MappingNode {
		l.errorf(root, "", "a scenario is a mapping of keys (name, peer, defaults, cases, ...), not %s", yamlerr.Describe(root))
		return nil
	}
	pairs := l.pairs(root, "", topKeys)
	sc := &Scenario{
		Name:     strings.TrimSuffix(filepath.Base(l.file), filepath.Ext(l.file)),
		File:     l.file,
		Device:   "auto",
		Port:     1,
		Repeat:   1,
		GIDIndex: rdma.AutoGIDIndex,
		Peer:     PeerLoopback,
	}
	// Variables first: every other value may use them.
	l.parseVars(root, pairs["vars"], overrides)
	sc.Vars = l.vars
	for _, key := range topKeys {
		p, ok := pairs[key]
		if !ok {
			continue
		}
		l.parseTop(sc, key, p.k, p.v)
	}
	l.checkFleet(sc, pairs)
	if sc.TokenFile != "" && sc.IsLoopback() {
		l.errorf(pairs["token_file"].k, "token_file", "applies to a remote peer only; with peer: loopback both ends are in this process")
	}
	if sc.TLS != nil && sc.IsLoopback() {
		l.errorf(pairs["tls"].k, "tls", "applies to a remote peer only; with peer: loopback both ends are in this process")
	}
	var defaults caseDef
	if p, ok := pairs["defaults"]; ok {
		defaults = l.parseCase(p.v, true)
	}
	p, ok := pairs["cases"]
	if !ok {
		l.errorf(root, "cases", "missing; a scenario needs a list of cases, each with name, op and measure")
		return sc
	}
	l.parseCases(sc, p.k, p.v, &defaults)
	if p, ok := pairs["repeat"]; ok {
		l.repeatRuns(sc, p.k)
	}
	return sc
}

// repeatRuns makes the expansion sc.Repeat passes, one after another, so
// a case's repeats are interleaved with the other cases' runs: a drift
// over time (a neighbour's job, a warming NIC) spreads over every case
// rather than landing on the last one, and rdmarun compare measures the
// spread between runs instead of assuming it.
func (l *loader) repeatRuns(sc *Scenario, at *yaml.Node) {
	if sc.Repeat <= 1 {
		return
	}
	if len(sc.runs)*sc.Repeat > maxRuns {
		l.errorf(at, "repeat", "%d passes of %d runs are more than %d runs; repeat fewer times, or sweep fewer sizes, QP counts or modes", sc.Repeat, len(sc.runs), maxRuns)
		return
	}
	pass := sc.runs
	sc.runs = make([]Run, 0, len(pass)*sc.Repeat)
	for r := 1; r <= sc.Repeat; r++ {
		for _, run := range pass {
			run.Index, run.Repeat = len(sc.runs), r
			sc.runs = append(sc.runs, run)
		}
	}
}

var topKeys = slices.Concat([]string{"name", "description", "device", "port", "gid_index", "peer", "peer_device", "token_file", "tls"}, fleetKeys, []string{"repeat", "vars", "defaults", "cases"})

func (l *loader) parseTop(sc *Scenario, key string, k, v *yaml.Node) {
	switch key {
	case "name":
		if s, ok := l.text(v, key, "write the scenario's name"); ok {
			sc.Name = s
		}
	case "description":
		if s, ok := l.scalarAllowEmpty(v, key); ok {
			sc.Description = s
		}
	case "device":
		if s, ok := l.text(v, key, "write auto or a device name such as mlx5_0 or rxe0 (see rdmarun devices)"); ok {
			sc.Device = s
		}
	case "port":
		if n, ok := l.int(v, key, 1, 255, "write a port number from 1 to 255"); ok {
			sc.Port = n
		}
	case "gid_index":
		s, ok := l.scalar(v, key, "write auto or a GID index from rdmarun devices")
		if !ok {
			return
		}
		if s == "auto" {
			sc.GIDIndex = rdma.AutoGIDIndex
			return
		}
		if n, ok := l.intValue(v, key, s, 0, 65535, "write auto or a GID index from rdmarun devices"); ok {
			sc.GIDIndex = n
		}
	case "peer":
		if s, ok := l.text(v, key, "write loopback or HOST[:PORT] of rdmarun serve"); ok {
			if s != PeerLoopback {
				l.checkAddress(v, key, s)
			}
			sc.Peer = s
		}
	case "peer_device":
		if s, ok := l.text(v, key, "write a device name such as rxe1"); ok {
			sc.PeerDevice = s
		}
	case "token_file":
		if s, ok := l.text(v, key, "write the path of a file holding the shared token"); ok {
			sc.TokenFile = s
		}
	case "tls":
		sc.TLS = l.parseTLS(v)
	case "repeat":
		if n, ok := l.int(v, key, 1, maxRuns, fmt.Sprintf("write how many times to run every case, 1 to %d", maxRuns)); ok {
			sc.Repeat = n
		}
	default:
		if slices.Contains(fleetKeys, key) {
			l.parseFleetKey(key, k, v)
		}
	}
}

// checkAddress reports whether s, the value of key, is HOST[:PORT] of an
// rdmarun serve, and says what is wrong with it if not.
func (l *loader) checkAddress(v *yaml.Node, key, s string) bool {
	allowed := "write HOST[:PORT] of rdmarun serve, such as 10.0.0.2:18520"
	if key == "peer" {
		allowed = "write loopback or HOST[:PORT] of rdmarun serve, such as 10.0.0.2:18520"
	}
	if strings.ContainsAny(s, " \t/") {
		l.errorf(v, key, "%q is not an address; %s", s, allowed)
		return false
	}
	if !strings.Contains(s, ":") || net.ParseIP(s) != nil {
		return true // a host name or an IP address, on the default port
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		l.errorf(v, key, "%q is not an address; %s", s, allowed)
		return false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		l.errorf(v, key, "port %q of %q is not a port number; %s", port, s, allowed)
		return false
	}
	return true
}

func (l *loader) parseTLS(v *yaml.Node) *ctrl.TLSConfig {
	pairs := l.pairs(v, "tls", []string{"ca", "cert", "key", "server_name"})
	if pairs == nil {
		return nil
	}
	t := &ctrl.TLSConfig{}
	for key, p := range pairs {
		allowed := "write a file path"
		if key == "server_name" {
			allowed = "write the name the responder's certificate holds"
		}
		s, ok := l.text(p.v, key, allowed)
		if !ok {
			continue
		}
		switch key {
		case "ca":
			t.CAFile = s
		case "cert":
			t.CertFile = s
		case "key":
			t.KeyFile = s
		case "server_name":
			t.ServerName = s
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		l.errorf(v, "tls", "cert and key go together; give both, or neither")
	}
	return t
}

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

type pair struct{ k, v *yaml.Node }

// pairs reads a mapping, reporting keys that are unknown or given twice.
// It returns nil when n is not a mapping.
func (l *loader) pairs(n *yaml.Node, key string, known []string) map[string]*pair {
	n = yamlerr.Resolve(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(n, key, "want %s, not %s", yamlerr.Keys(known), yamlerr.Describe(n))
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
		if !slices.Contains(known, name) {
			l.errorf(k, "", "%s", yamlerr.UnknownKey(name, known))
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
