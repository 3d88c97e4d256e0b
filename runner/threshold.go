package runner

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/portstats"
)

// Threshold is a compiled pass condition. It keeps its source so reports
// can quote what was judged.
type Threshold struct {
	src      string
	program  *vm.Program
	names    []string // Env names it reads, first use first
	counters []string // names passed to counter() as literals
	// compared are its regressed() and improved() calls, which read the
	// comparison with the baseline.
	compared []comparedCall
}

// maxThresholdLen bounds an expression; a condition longer than this is
// a mistake (a pasted file), and bounding it keeps compilation cheap.
const maxThresholdLen = 1000

// CompileThreshold compiles a pass condition over Env. A name Env does not
// have, or an expression that is not true/false, is an error here rather
// than a silent verdict later.
func CompileThreshold(src string) (*Threshold, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty condition; write one such as p99 < 5us && errors == 0")
	}
	if len(src) > maxThresholdLen {
		return nil, fmt.Errorf("condition is %d characters long; at most %d", len(src), maxThresholdLen)
	}
	code := rewriteDurations(src)
	if err := checkCompareCalls(code); err != nil {
		return nil, err
	}
	// Compiled first without AsBool, so a condition that is not true or
	// false is told by its type, not by the compiler's message.
	typed, err := expr.Compile(code, expr.Env(Env{}), expr.Patch(comparePatch{}))
	if err != nil {
		return nil, explainCompileError(src, code, err)
	}
	if k := typed.Node().Type(); k != nil && k.Kind() != reflect.Bool && k.Kind() != reflect.Interface {
		return nil, fmt.Errorf("%q is %s, not true or false; write a comparison such as p99 < 5us", src, typeWord(k))
	}
	program, err := expr.Compile(code, expr.Env(Env{}), expr.Patch(comparePatch{}), expr.AsBool())
	if err != nil {
		return nil, explainCompileError(src, code, err)
	}
	t := &Threshold{src: src, program: program}
	t.collectNames()
	return t, nil
}

// MustCompileThreshold is CompileThreshold for conditions known to be
// valid, such as those in tests and built-in defaults.
func MustCompileThreshold(src string) *Threshold {
	t, err := CompileThreshold(src)
	if err != nil {
		panic(err)
	}
	return t
}

func explainCompileError(src, code string, err error) error {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		// The snippet and column would point into the rewritten text,
		// which the user never wrote; the message alone is clearer.
		msg = fe.Message
	}
	if name, ok := unknownName(code); ok {
		hint := ""
		if s := yamlerr.DidYouMean(name, knownNames(), false); s != "" {
			hint = " (" + s + ")"
		}
		if name == "baseline" {
			hint = " (the baseline's values are baseline.NAME, such as baseline.p99)"
		}
		return fmt.Errorf("unknown name %s%s; known: %s", name, hint, knownList())
	}
	return fmt.Errorf("%s in %q; write a condition such as p99 < 5us && errors == 0 (durations like 100ns, 5us, 1.5ms, 2s; latencies are in microseconds)", msg, src)
}

// unknownName finds, in the syntax tree of a condition that did not
// compile, the first name Env does not have: the likeliest cause, told
// from the tree rather than from the compiler's message. Names a let
// declares and functions called are not Env's to know.
func unknownName(code string) (string, bool) {
	tree, err := parser.Parse(code)
	if err != nil {
		return "", false
	}
	declared, called := map[string]bool{}, map[ast.Node]bool{}
	// The baseline's names are member accesses, baseline.p99: the
	// identifier baseline stands for the whole name.
	member := map[ast.Node]string{}
	var idents []string
	ast.Walk(&tree.Node, visitor(func(n ast.Node) {
		switch n := n.(type) {
		case *ast.VariableDeclaratorNode:
			declared[n.Name] = true
		case *ast.CallNode:
			called[n.Callee] = true
		case *ast.MemberNode:
			if name, ok := baselineMember(n); ok {
				member[n.Node] = name
			}
		}
	}))
	ast.Walk(&tree.Node, visitor(func(n ast.Node) {
		if name, ok := member[n]; ok {
			idents = append(idents, name)
		} else if id, ok := n.(*ast.IdentifierNode); ok && !called[n] {
			idents = append(idents, id.Value)
		}
	}))
	for _, name := range idents {
		if _, ok := lookupName(name); !ok && !declared[name] {
			return name, true
		}
	}
	return "", false
}

func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "of type " + t.String()
}

// collectNames records which Env names the expression reads, so reports
// can show the values a verdict was based on and the loader can tell a
// latency condition from a bandwidth one.
func (t *Threshold) collectNames() {
	seen := map[string]bool{}
	node := t.program.Node()
	ast.Walk(&node, visitor(func(n ast.Node) {
		name := ""
		switch n := n.(type) {
		case *ast.IdentifierNode:
			name = n.Value
		case *ast.MemberNode:
			name, _ = baselineMember(n)
		case *ast.CallNode:
			id, ok := n.Callee.(*ast.IdentifierNode)
			if !ok || len(n.Arguments) != 1 {
				return
			}
			s, ok := n.Arguments[0].(*ast.StringNode)
			switch {
			case !ok:
			case id.Value == "counter" && !seen["counter:"+s.Value]:
				seen["counter:"+s.Value] = true
				t.counters = append(t.counters, s.Value)
			case slices.Contains(compareFuncs, id.Value):
				if c := (comparedCall{id.Value, s.Value}); !slices.Contains(t.compared, c) {
					t.compared = append(t.compared, c)
				}
			}
			return
		}
		if _, ok := lookupName(name); ok && !seen[name] {
			seen[name] = true
			t.names = append(t.names, name)
		}
	}))
}

type visitor func(ast.Node)

func (v visitor) Visit(n *ast.Node) { v(*n) }

// Source is the condition as written (after ${var} substitution).
func (t *Threshold) Source() string { return t.src }

func (t *Threshold) String() string { return t.src }

// MarshalText writes a threshold as its source, for JSON reports.
func (t *Threshold) MarshalText() ([]byte, error) { return []byte(t.src), nil }

// Names lists the Env names the condition reads, in order of first use.
func (t *Threshold) Names() []string { return append([]string(nil), t.names...) }

// kind tells which runs can judge the condition: one that reads latency
// names needs a latency run, one that reads bandwidth names a bandwidth
// run. both is set when it reads the two kinds, which no single run has.
func (t *Threshold) kind() (k metricKind, both bool) {
	for _, n := range t.kinds() {
		if n.kind == anyRun {
			continue
		}
		if k != anyRun && k != n.kind {
			return k, true
		}
		k = n.kind
	}
	return k, false
}

// namesOf lists the names of one kind the condition reads.
func (t *Threshold) namesOf(k metricKind) []string {
	var out []string
	for _, n := range t.kinds() {
		if n.kind == k {
			out = append(out, n.name)
		}
	}
	return out
}

// kinds is each name the condition reads with its kind, its regressed()
// and improved() calls among them: regressed(p99) reads a latency.
func (t *Threshold) kinds() []envName {
	var out []envName
	for _, name := range t.names {
		n, _ := lookupName(name)
		out = append(out, n)
	}
	for _, c := range t.compared {
		n, _ := lookupName(c.metric)
		out = append(out, envName{name: c.String(), kind: n.kind})
	}
	return out
}

// Eval judges the condition on one run's environment. A condition that
// reads a category a side does not report is an error, like counter()
// of a counter neither side has: either side may hold the whole story,
// so judging the rest, or a zero, could pass a run it should fail.
func (t *Threshold) Eval(env Env) (bool, error) {
	for _, name := range t.names {
		if err := env.categoryError(name); err != nil {
			return false, fmt.Errorf("threshold %q: %w", t.src, err)
		}
		if err := env.setupError(name); err != nil {
			return false, fmt.Errorf("threshold %q: %w", t.src, err)
		}
		if err := env.deliveryError(name); err != nil {
			return false, fmt.Errorf("threshold %q: %w", t.src, err)
		}
		if err := env.baselineError(name); err != nil {
			return false, fmt.Errorf("threshold %q: %w", t.src, err)
		}
	}
	// A comparison that judged nothing fails the condition even where
	// another branch would decide alone, as a category does.
	for _, c := range t.compared {
		if _, err := env.compareVerdict(c); err != nil {
			return false, fmt.Errorf("threshold %q: %w", t.src, err)
		}
	}
	if env.Counter == nil {
		env.Counter = noCounters
	}
	if env.Regressed == nil || env.Improved == nil {
		env.Regressed, env.Improved = noBaseline, noBaseline
	}
	out, err := expr.Run(t.program, env)
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			err = errors.New(fe.Message)
		}
		return false, fmt.Errorf("threshold %q: %w", t.src, err)
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("threshold %q gave %v, not true or false", t.src, out)
	}
	return b, nil
}

func noCounters(name string) (int, error) {
	return 0, fmt.Errorf("counter(%q): this run recorded no port counters", name)
}

// categoryError says why the category name cannot be judged, or nil when
// every side reports it (or name is not a category).
func (e Env) categoryError(name string) error {
	if !slices.Contains(portstats.CategoryNames, name) {
		return nil
	}
	if e.unreported == nil && e.Counter == nil {
		return fmt.Errorf("%s: this run recorded no port counters", name)
	}
	return e.unreported[name]
}

// setupError says why a set-up name cannot be judged: the run connected
// without the CM, so a zero would pass any bound.
func (e Env) setupError(name string) error {
	if e.hasSetup || !slices.Contains(setupNames, name) {
		return nil
	}
	return fmt.Errorf("%s: this run has no CM set-up times (it connected by exchange; set connect: rdma_cm)", name)
}

// deliveryError says why a delivery name cannot be judged: the run is not
// UD, where nothing is lost without an error, so a zero would pass.
func (e Env) deliveryError(name string) error {
	if e.hasDelivery || !slices.Contains(deliveryNames, name) {
		return nil
	}
	return fmt.Errorf("%s: this run has no delivery count (only qp_type ud loses messages without an error)", name)
}

// Values returns the numbers the condition read, keyed by name, so a
// report can show what a verdict was based on: {"p99": 4.2}. counter()
// calls appear as counter("name"), and regressed(p99) or improved(p99)
// as the comparison's new/base ratio and its interval, ratio(p99),
// ratio_low(p99) and ratio_high(p99); string names (mode, op), and
// counters, categories and baseline values the run did not record, are
// left out.
func (t *Threshold) Values(env Env) map[string]float64 {
	out := map[string]float64{}
	for _, name := range t.names {
		if env.categoryError(name) != nil || env.setupError(name) != nil || env.deliveryError(name) != nil || env.baselineError(name) != nil {
			continue
		}
		switch v, _ := env.Value(name); v := v.(type) {
		case float64:
			out[name] = v
		case int:
			out[name] = float64(v)
		}
	}
	for _, c := range t.counters {
		if env.Counter == nil {
			break
		}
		if v, err := env.Counter(c); err == nil {
			out[fmt.Sprintf("counter(%q)", c)] = float64(v)
		}
	}
	for _, c := range t.compared {
		env.baseline.ratios(c.metric, out)
	}
	return out
}
