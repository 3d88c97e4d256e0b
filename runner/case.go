package runner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// caseDef is a case (or defaults:) as written; nil and zero fields were
// not given, so a case can fall back to the defaults field by field.
type caseDef struct {
	node        *yaml.Node
	name        string
	nameNode    *yaml.Node
	description string
	op          *rdma.Op
	opNode      *yaml.Node
	measures    []rdma.Measure
	sizes       []int
	qps         []int
	qpsNode     *yaml.Node
	modes       []rdma.Mode
	// knobs set engine settings, in file order; the defaults' run first.
	knobs       []func(*rdma.TestSpec)
	pass        []*Threshold
	passNodes   []*yaml.Node
	abortOnFail *bool
	// bad is set when a value was wrong: the error is reported, and the
	// case is not expanded, which would only add echoes of it.
	bad bool
}

// caseKeys are the keys of a case; defaults: takes all but name,
// description and pass.
var caseKeys = append([]string{"name", "description", "op", "measure", "sizes", "qps", "mode", "pass", "abort_on_fail"}, knobKeys()...)

var defaultsKeys = slices.DeleteFunc(slices.Clone(caseKeys), func(k string) bool {
	return k == "name" || k == "description" || k == "pass"
})

const (
	allowedOps      = "write send, send_imm, write, write_imm, read, fetch_add or cmp_swap"
	allowedMeasures = "write latency, bandwidth, or both"
	allowedModes    = "write busy_poll, event, or both"
	allowedQPs      = "write a QP count from 1 to 4096, or a list such as [1, 4]"
	allowedSizes    = "write a number of bytes with an optional unit: B, KiB, MiB, GiB, KB, MB, GB"
	maxSize         = 1 << 30
	maxSweep        = 64
)

func (l *loader) parseCase(n *yaml.Node, isDefaults bool) (d caseDef) {
	d = caseDef{node: yamlerr.Resolve(n)}
	known, where := caseKeys, "cases"
	if isDefaults {
		known, where = defaultsKeys, "defaults"
	}
	before := l.c.Count()
	defer func() { d.bad = l.c.Count() > before }()
	pairs := l.pairs(n, where, known)
	var iterNode, durNode *yaml.Node
	// Walk in file order so knobs apply in the order written.
	for i := 0; pairs != nil && i+1 < len(d.node.Content); i += 2 {
		key := yamlerr.Resolve(d.node.Content[i]).Value
		p, ok := pairs[key]
		if !ok || p.k != yamlerr.Resolve(d.node.Content[i]) {
			continue // unknown or repeated: already reported
		}
		v := p.v
		switch key {
		case "name":
			d.nameNode = yamlerr.Resolve(v)
			if s, ok := l.text(v, key, "write a name for the case, unique in the file"); ok {
				d.name = s
			}
		case "description":
			if s, ok := l.scalarAllowEmpty(v, key); ok {
				d.description = s
			}
		case "op":
			d.opNode = yamlerr.Resolve(v)
			if s, ok := l.scalar(v, key, allowedOps); ok {
				if op, err := rdma.ParseOp(s); err == nil {
					d.op = &op
				} else {
					l.errorf(yamlerr.Resolve(v), key, "%q is not an op; %s%s", s, allowedOps, hint(s, opNames()))
				}
			}
		case "measure":
			d.measures = l.measures(v)
		case "sizes":
			d.sizes = l.sizes(v)
		case "qps":
			d.qps, d.qpsNode = l.qpsList(v), yamlerr.Resolve(v)
		case "mode":
			d.modes = l.modes(v)
		case "pass":
			d.pass, d.passNodes = l.pass(v)
		case "abort_on_fail":
			if b, ok := l.bool(v, key); ok {
				d.abortOnFail = &b
			}
		default:
			if key == "iterations" {
				iterNode = p.k
			}
			if key == "duration" {
				durNode = p.k
			}
			if f := l.knob(key, v); f != nil {
				d.knobs = append(d.knobs, f)
			}
		}
	}
	switch {
	case iterNode == nil || durNode == nil:
	case l.spelled != nil:
		l.errorf(nil, "", "%s and %s: give one, not both", l.spelled["iterations"], l.spelled["duration"])
	default:
		l.errorf(durNode, "duration", "given with iterations (line %d); a run is bounded by one of them", iterNode.Line)
	}
	return d
}

func hint(s string, known []string) string {
	if m := yamlerr.DidYouMean(s, known, true); m != "" {
		return "; " + m
	}
	return ""
}

func opNames() []string {
	var out []string
	for op := rdma.OpSend; op <= rdma.OpCmpSwap; op++ {
		out = append(out, op.String())
	}
	return out
}

func (l *loader) measures(v *yaml.Node) []rdma.Measure {
	out := oneOrBoth(l, v, "measure", allowedMeasures, [2]rdma.Measure{rdma.MeasureLatency, rdma.MeasureBandwidth}, rdma.ParseMeasure)
	// Latency first, whatever the order written: runs are grouped that way.
	slices.Sort(out)
	return out
}

func (l *loader) modes(v *yaml.Node) []rdma.Mode {
	return oneOrBoth(l, v, "mode", allowedModes, [2]rdma.Mode{rdma.ModeBusyPoll, rdma.ModeEvent}, rdma.ParseMode)
}

func (l *loader) qpsList(v *yaml.Node) []int {
	its, ok := l.items(v, "qps", allowedQPs)
	if !ok {
		return nil
	}
	var out []int
	for _, it := range its {
		n, ok := l.intValue(it.n, "qps", it.s, 1, 4096, allowedQPs)
		if !ok {
			return nil
		}
		if slices.Contains(out, n) {
			l.errorf(it.n, "qps", "%d is listed twice; list each QP count once", n)
			return nil
		}
		out = append(out, n)
	}
	return out
}

// sizes reads a size, a list of sizes, or a range {from, to, factor}.
func (l *loader) sizes(v *yaml.Node) []int {
	if n := yamlerr.Resolve(v); n.Kind == yaml.MappingNode {
		return l.sizeRange(n)
	}
	its, ok := l.items(v, "sizes", allowedSizes+", a list of them, or a range {from: 4KiB, to: 8MiB, factor: 2}")
	if !ok {
		return nil
	}
	var out []int
	for _, it := range its {
		n, ok := l.size(it.n, "sizes", it.s)
		if !ok {
			return nil
		}
		if slices.Contains(out, n) {
			l.errorf(it.n, "sizes", "%s is listed twice; list each size once", it.s)
			return nil
		}
		out = append(out, n)
	}
	if len(out) > maxSweep {
		l.errorf(yamlerr.Resolve(v), "sizes", "%d sizes; at most %d in one case", len(out), maxSweep)
		return nil
	}
	return out
}

func (l *loader) size(n *yaml.Node, key, s string) (int, bool) {
	b, err := units.ParseBytes(s)
	switch {
	case err != nil:
		l.errorf(n, key, "%q is not a size; %s", s, allowedSizes)
	case b == 0:
		l.errorf(n, key, "%q is not a size a message can have; write 1 B or more", s)
	case b > maxSize:
		l.errorf(n, key, "%q is larger than 1GiB, the largest message a test sends; write 1 B to 1 GiB", s)
	default:
		return int(b), true
	}
	return 0, false
}

// sizeRange expands {from, to, factor}: from, from*factor, ... up to and
// including to when the steps land on it. factor may be fractional; each
// step is rounded to whole bytes and grows by at least one.
func (l *loader) sizeRange(n *yaml.Node) []int {
	pairs := l.pairs(n, "sizes", []string{"from", "to", "factor"})
	if pairs == nil {
		return nil
	}
	ok := true
	get := func(key string) int {
		p, found := pairs[key]
		if !found {
			l.errorf(n, "sizes", "range without %s; write {from: 4KiB, to: 8MiB, factor: 2}", key)
			ok = false
			return 0
		}
		s, good := l.scalar(p.v, key, allowedSizes)
		if !good {
			ok = false
			return 0
		}
		b, good := l.size(yamlerr.Resolve(p.v), key, s)
		ok = ok && good
		return b
	}
	from, to := get("from"), get("to")
	factor := 2.0
	if p, found := pairs["factor"]; found {
		const allowed = "write a number larger than 1, such as 2"
		s, good := l.scalar(p.v, "factor", allowed)
		if good {
			f, err := strconv.ParseFloat(s, 64)
			switch {
			case err != nil || math.IsNaN(f):
				l.errorf(yamlerr.Resolve(p.v), "factor", "%q is not a number; %s", s, allowed)
				good = false
			case f <= 1:
				l.errorf(yamlerr.Resolve(p.v), "factor", "%s would not grow the size; %s", s, allowed)
				good = false
			}
			factor = f
		}
		ok = ok && good
	}
	if !ok {
		return nil
	}
	if from > to {
		l.errorf(n, "sizes", "from %s is larger than to %s; write from <= to", units.FormatBytes(uint64(from)), units.FormatBytes(uint64(to)))
		return nil
	}
	var out []int
	for s := from; s <= to; {
		if len(out) == maxSweep {
			l.errorf(n, "sizes", "the range from %s to %s by %g has more than %d sizes; raise factor or narrow the range", units.FormatBytes(uint64(from)), units.FormatBytes(uint64(to)), factor, maxSweep)
			return nil
		}
		out = append(out, s)
		next := math.Round(float64(s) * factor)
		if next > maxSize {
			break
		}
		s = max(int(next), s+1)
	}
	return out
}

func (l *loader) pass(v *yaml.Node) ([]*Threshold, []*yaml.Node) {
	const allowed = "write a condition such as p99 < 5us && errors == 0, or a list of them"
	n := yamlerr.Resolve(v)
	var nodes []*yaml.Node
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			l.errorf(n, "pass", "empty list; %s", allowed)
			return nil, nil
		}
		for _, c := range n.Content {
			nodes = append(nodes, yamlerr.Resolve(c))
		}
	default:
		nodes = []*yaml.Node{n}
	}
	var ts []*Threshold
	var tn []*yaml.Node
	for _, c := range nodes {
		s, ok := l.scalar(c, "pass", allowed)
		if !ok {
			continue
		}
		t, err := CompileThreshold(s)
		if err != nil {
			l.errorf(c, "pass", "%s", err)
			continue
		}
		if !l.usesBaseline(c, t) {
			continue
		}
		ts = append(ts, t)
		tn = append(tn, c)
	}
	return ts, tn
}

func (l *loader) parseCases(sc *Scenario, k, v *yaml.Node, defaults *caseDef) {
	n := yamlerr.Resolve(v)
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "cases", "want a list of cases, not %s", yamlerr.Describe(n))
		return
	}
	if len(n.Content) == 0 {
		l.errorf(n, "cases", "empty; a scenario needs at least one case, with name, op and measure")
		return
	}
	names := map[string]*yaml.Node{}
	total := 0
	for _, cn := range n.Content {
		d := l.parseCase(cn, false)
		if d.node.Kind != yaml.MappingNode {
			continue // reported by parseCase
		}
		if d.nameNode == nil {
			l.errorf(d.node, "name", "missing; every case needs a name, unique in the file")
		} else if first, dup := names[d.name]; dup && d.name != "" {
			l.errorf(d.nameNode, "name", "case %q is defined twice (first at line %d); give each case its own name", d.name, first.Line)
			continue
		} else {
			names[d.name] = d.nameNode
		}
		c, ok := l.merge(d, defaults)
		if !ok || !l.checkMulticastTarget(sc, &c, &d) {
			continue
		}
		total += c.runCount()
		if total > maxRuns {
			l.errorf(k, "cases", "the scenario expands to more than %d runs; split it, or sweep fewer sizes, QP counts or modes", maxRuns)
			return
		}
		runs, refused := c.expand(len(sc.runs))
		if !l.checkRuns(&c, &d, refused) {
			continue
		}
		sc.Cases = append(sc.Cases, c)
		sc.runs = append(sc.runs, runs...)
	}
}

// checkMulticastTarget refuses a multicast case where the scenario cannot
// run one: in a fleet (not built yet), or with receivers in loopback,
// whose one receiver is peer_device in this process.
func (l *loader) checkMulticastTarget(sc *Scenario, c *Case, d *caseDef) bool {
	at := func(key string) *yaml.Node {
		for i := 0; i+1 < len(d.node.Content); i += 2 {
			if yamlerr.Resolve(d.node.Content[i]).Value == key {
				return d.node.Content[i]
			}
		}
		return d.node
	}
	switch {
	case c.Spec.Multicast != "" && sc.Fleet != nil:
		l.errorf(at("multicast"), "multicast", "a fleet's multicast cases (one sender, every other host receiving) are not built yet; run it with peer: and receivers: instead of hosts:")
		return false
	case len(c.Spec.Receivers) > 0 && sc.IsLoopback():
		l.errorf(at("receivers"), "receivers", "name remote responders; with peer: loopback the one receiver is peer_device, in this process; use peer: HOST to send to responders")
		return false
	}
	return true
}

// merge folds the defaults into a case and checks its conditions against
// what it measures.
func (l *loader) merge(d caseDef, defaults *caseDef) (Case, bool) {
	c := Case{Name: d.name, Description: d.description, Line: d.node.Line, Pass: d.pass, QPsLine: d.node.Line, QPsColumn: d.node.Column}
	for _, n := range []*yaml.Node{d.qpsNode, defaults.qpsNode} {
		if n != nil {
			c.QPsLine, c.QPsColumn = n.Line, n.Column
			break
		}
	}
	ok := true
	switch {
	case d.op != nil:
		c.Op = *d.op
	case defaults.op != nil:
		c.Op = *defaults.op
	case d.opNode == nil && defaults.opNode == nil:
		l.errorf(d.node, "op", "missing in %s; %s", label(d.name), allowedOps)
		ok = false
	}
	c.Measures = firstOf(d.measures, defaults.measures)
	if c.Measures == nil && !hasKey(d.node, "measure") && !hasKey(defaults.node, "measure") {
		l.errorf(d.node, "measure", "missing in %s; %s", label(d.name), allowedMeasures)
		ok = false
	}
	c.Sizes = firstOf(d.sizes, defaults.sizes, []int{0})
	c.QPs = firstOf(d.qps, defaults.qps, []int{1})
	c.Modes = firstOf(d.modes, defaults.modes, []rdma.Mode{rdma.ModeBusyPoll})
	ok = ok && !d.bad && !defaults.bad
	switch {
	case d.abortOnFail != nil:
		c.AbortOnFail = *d.abortOnFail
	case defaults.abortOnFail != nil:
		c.AbortOnFail = *defaults.abortOnFail
	}
	for _, f := range append(slices.Clone(defaults.knobs), d.knobs...) {
		f(&c.Spec)
	}
	if !ok {
		return c, false
	}
	for i, t := range d.pass {
		ok = l.checkApplies(t, d.passNodes[i], &c) && ok
	}
	return c, ok
}

func label(name string) string {
	if name == "" {
		return "this case"
	}
	return fmt.Sprintf("case %q", name)
}

func firstOf[T any](lists ...[]T) []T {
	for _, l := range lists {
		if l != nil {
			return l
		}
	}
	return nil
}

func hasKey(n *yaml.Node, key string) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if yamlerr.Resolve(n.Content[i]).Value == key {
			return true
		}
	}
	return false
}

// kindWords names each kind of run for the errors of checkApplies: its
// measure and the names only it has.
var kindWords = map[metricKind]struct{ measure, names string }{
	latencyRun:   {"latency", "p50, p99, ..."},
	bandwidthRun: {"bandwidth", "bw_gbps, bw_gib or msg_rate"},
	connectRun:   {"connect", "connect_rate"},
}

// checkApplies refuses conditions that no run of the case could judge
// honestly: a latency name on a bandwidth run reads 0 and would pass
// `p99 < 5us` without measuring anything.
func (l *loader) checkApplies(t *Threshold, n *yaml.Node, c *Case) bool {
	k, both := t.kind()
	if both {
		var read []string
		for _, k := range []metricKind{latencyRun, bandwidthRun, connectRun} {
			if names := t.namesOf(k); len(names) > 0 {
				read = append(read, fmt.Sprintf("%s (%s)", kindWords[k].measure, strings.Join(names, ", ")))
			}
		}
		l.errorf(n, "pass", "%q reads %s, but each run measures one of them; write two conditions in a list",
			t.Source(), strings.Join(read, " and "))
		return false
	}
	if k != anyRun && !slices.ContainsFunc(c.Measures, func(m rdma.Measure) bool { return kindOf(m) == k }) {
		var have, use []string
		for _, m := range c.Measures {
			have = append(have, m.String())
			use = append(use, kindWords[kindOf(m)].names)
		}
		l.errorf(n, "pass", "%s is not measured by this case (measure: %s); use %s, or add measure %s",
			strings.Join(t.namesOf(k), ", "), strings.Join(have, ", "), strings.Join(use, "; "), kindWords[k].measure)
		return false
	}
	if c.Spec.Connect != rdma.ConnectCM {
		for _, name := range t.names {
			if slices.Contains(setupNames, name) {
				l.errorf(n, "pass", "%s: this case connects by %s, which has no CM set-up to time; set connect: rdma_cm", name, c.Spec.Connect)
				return false
			}
		}
	}
	if c.Spec.QPType != rdma.UD {
		for _, name := range t.names {
			if slices.Contains(deliveryNames, name) {
				l.errorf(n, "pass", "%s: this case runs qp_type %s, which loses no message without an error, so it counts no delivery; it applies to qp_type ud", name, c.Spec.QPType)
				return false
			}
		}
	}
	if !c.Op.OneWay() {
		for _, name := range t.names {
			if strings.HasPrefix(strings.TrimPrefix(name, "baseline."), "one_way_") {
				l.errorf(n, "pass", "%s: op %s is request-response, so only its round trip is measured; use %s", name, c.Op, strings.Replace(name, "one_way_", "", 1))
				return false
			}
		}
	}
	return true
}

// checkRuns reports each distinct reason the engine refused a case's runs
// once, at the case's op.
func (l *loader) checkRuns(c *Case, d *caseDef, refused []refusedRun) bool {
	at := d.opNode
	if at == nil {
		at = d.node
	}
	type problem struct {
		first rdma.Test
		count int
	}
	var order []string
	problems := map[string]*problem{}
	for _, r := range refused {
		msg := r.err.Error()
		if p, ok := problems[msg]; ok {
			p.count++
			continue
		}
		problems[msg] = &problem{first: r.spec, count: 1}
		order = append(order, msg)
	}
	for _, msg := range order {
		p := problems[msg]
		if p.count < c.runCount() {
			s := p.first
			msg += fmt.Sprintf(" (at %s, size %s, qps %d, mode %s)", s.Measure, units.FormatBytes(uint64(s.Size)), s.QPs, s.Mode)
		}
		l.errorf(at, fmt.Sprintf("case %q", c.Name), "%s", msg)
	}
	return len(order) == 0
}
