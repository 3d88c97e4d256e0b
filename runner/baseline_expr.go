package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// compareFuncs ask runner/compare's verdict on one metric of the run's
// test, the baseline against this report.
var compareFuncs = []string{"regressed", "improved"}

// comparedMetrics are the names regressed() and improved() take, each
// with the name runner/compare gives the metric: the metrics it judges.
var comparedMetrics = []struct{ name, compare string }{
	{"p50", "p50"}, {"p99", "p99"}, {"p999", "p99.9"}, {"bw_gbps", "bw"}, {"msg_rate", "msg_rate"},
}

func comparedNames() []string {
	out := make([]string, len(comparedMetrics))
	for i, m := range comparedMetrics {
		out[i] = m.name
	}
	return out
}

// compareName is runner/compare's name of a metric regressed() takes.
func compareName(metric string) (string, bool) {
	for _, m := range comparedMetrics {
		if m.name == metric {
			return m.compare, true
		}
	}
	return "", false
}

// comparedCall is one regressed(metric) or improved(metric).
type comparedCall struct{ fn, metric string }

func (c comparedCall) String() string { return c.fn + "(" + c.metric + ")" }

// usesBaseline reports whether the condition reads the baseline: such a
// condition is judged after the scenario's last run (judgeBaseline).
func (t *Threshold) usesBaseline() bool {
	return len(t.compared) > 0 || slices.ContainsFunc(t.names, func(n string) bool { return strings.HasPrefix(n, "baseline.") })
}

// comparePatch turns regressed(p99) into regressed("p99") before the
// expression is checked: the argument names a metric, it is not this
// run's value of it, so the comparison can be asked for that metric.
type comparePatch struct{}

func (comparePatch) Visit(n *ast.Node) {
	c, ok := (*n).(*ast.CallNode)
	if !ok || len(c.Arguments) != 1 {
		return
	}
	if id, ok := c.Callee.(*ast.IdentifierNode); !ok || !slices.Contains(compareFuncs, id.Value) {
		return
	}
	if a, ok := c.Arguments[0].(*ast.IdentifierNode); ok {
		ast.Patch(&c.Arguments[0], &ast.StringNode{Value: a.Value})
	}
}

// checkCompareCalls refuses a regressed() or improved() that does not
// name one metric runner/compare judges: the compiler would accept
// regressed(p90) and the comparison would have nothing to say.
func checkCompareCalls(code string) error {
	tree, err := parser.Parse(code)
	if err != nil {
		return nil // the compiler says what is wrong
	}
	var bad error
	ast.Walk(&tree.Node, visitor(func(n ast.Node) {
		c, ok := n.(*ast.CallNode)
		if !ok || bad != nil {
			return
		}
		id, ok := c.Callee.(*ast.IdentifierNode)
		if !ok || !slices.Contains(compareFuncs, id.Value) {
			return
		}
		arg := "..."
		if len(c.Arguments) == 1 {
			switch a := c.Arguments[0].(type) {
			case *ast.IdentifierNode:
				arg = a.Value
			case *ast.StringNode:
				arg = a.Value
			}
		}
		if _, ok := compareName(arg); ok {
			return
		}
		not := ""
		if arg != "..." {
			not = ", not " + arg
			if s := yamlerr.DidYouMean(arg, comparedNames(), false); s != "" {
				not += " (" + s + ")"
			}
		}
		bad = fmt.Errorf("%s(%s): the comparison with the baseline judges %s%s; write one of them, such as not %s(p99)",
			id.Value, arg, yamlerr.OrList(comparedNames()), not, id.Value)
	}))
	return bad
}

// baselineMember is the name a member access such as baseline.p99
// reads, when it reads the baseline.
func baselineMember(n *ast.MemberNode) (string, bool) {
	id, ok := n.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "baseline" {
		return "", false
	}
	p, ok := n.Property.(*ast.StringNode)
	if !ok {
		return "", false
	}
	return "baseline." + p.Value, true
}
