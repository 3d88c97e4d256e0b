package runner

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// Env is what a threshold sees of one run. Latencies are in microseconds,
// the unit perftest prints, so `p99 < 5` and `p99 < 5us` mean the same:
// duration literals (100ns, 5us, 1.5ms, 2s) are converted to microseconds
// before the expression is compiled, and size literals (4KiB, 1MB) to
// bytes.
//
// The field tags are the names thresholds use; envNames documents each,
// and a test keeps the two in step.
type Env struct {
	// Round-trip latency of the run's operations, microseconds.
	Min    float64 `expr:"min"`
	Max    float64 `expr:"max"`
	Mean   float64 `expr:"mean"`
	Stddev float64 `expr:"stddev"`
	P50    float64 `expr:"p50"`
	P90    float64 `expr:"p90"`
	P99    float64 `expr:"p99"`
	P999   float64 `expr:"p999"`
	P9999  float64 `expr:"p9999"`
	// One-way latency (RTT/2) of the ping-pong ops, microseconds.
	OneWayP50 float64 `expr:"one_way_p50"`
	OneWayP99 float64 `expr:"one_way_p99"`

	// Bandwidth summed over the run's directions (both when bidirectional,
	// as perftest -b reports) and over all QPs.
	BwGbps  float64 `expr:"bw_gbps"`  // 10^9 bit/s
	BwGiB   float64 `expr:"bw_gib"`   // 2^30 bytes/s
	MsgRate float64 `expr:"msg_rate"` // messages/s

	Errors  int `expr:"errors"`  // completion errors; a run that finished has none
	Retries int `expr:"retries"` // sum of the retry-related counter deltas

	Size     int     `expr:"size"` // message size, bytes
	QPs      int     `expr:"qps"`
	Mode     string  `expr:"mode"`      // busy_poll or event
	Op       string  `expr:"op"`        // send, write, read, ...
	LinkGbps float64 `expr:"link_gbps"` // the port's rate, 10^9 bit/s

	// The counter categories (portstats.CategoryNames), summed over the
	// two sides like retries. The paused times are microseconds, like the
	// latencies, so `pause_rx_us < 1ms` reads as written.
	Retransmits int     `expr:"retransmits"`
	SeqErrors   int     `expr:"seq_errors"`
	CNPSent     int     `expr:"cnp_sent"`
	CNPHandled  int     `expr:"cnp_handled"`
	ECNMarked   int     `expr:"ecn_marked"`
	PauseRx     int     `expr:"pause_rx"`
	PauseTx     int     `expr:"pause_tx"`
	PauseRxUs   float64 `expr:"pause_rx_us"`
	PauseTxUs   float64 `expr:"pause_tx_us"`

	// Connection set-up through the CM, over the run's QPs as the
	// requester timed them, microseconds: address resolution, route
	// resolution, connect (request sent to ESTABLISHED) and the three
	// together. A run connected by exchange has none (see setupError).
	ResolveAddrP50  float64 `expr:"resolve_addr_p50"`
	ResolveAddrP99  float64 `expr:"resolve_addr_p99"`
	ResolveAddrMax  float64 `expr:"resolve_addr_max"`
	ResolveRouteP50 float64 `expr:"resolve_route_p50"`
	ResolveRouteP99 float64 `expr:"resolve_route_p99"`
	ResolveRouteMax float64 `expr:"resolve_route_max"`
	ConnectP50      float64 `expr:"connect_p50"`
	ConnectP99      float64 `expr:"connect_p99"`
	ConnectMax      float64 `expr:"connect_max"`
	SetupP50        float64 `expr:"setup_p50"`
	SetupP99        float64 `expr:"setup_p99"`
	SetupMax        float64 `expr:"setup_max"`
	// ConnectRate is a measure connect run's QPs connected per second.
	ConnectRate float64 `expr:"connect_rate"`

	// Delivery of a UD run, summed over directions and QPs: messages (or,
	// in latency, round trips) sent, received, lost, and lost over sent;
	// late answers (latency); the receivers' rate, 10^9 bit/s.
	Sent      int     `expr:"sent"`
	Received  int     `expr:"received"`
	Lost      int     `expr:"lost"`
	LossRatio float64 `expr:"loss_ratio"`
	Late      int     `expr:"late"`
	RxGbps    float64 `expr:"rx_gbps"`

	// Counter returns a port counter's delta over the run, summed over the
	// two sides: counter("rnr_nak_retry_err"). A name may be prefixed with
	// "counters/" or "hw_counters/" to pick the directory, or with
	// "ethtool/" for the netdev's pause statistics.
	Counter func(name string) (int, error) `expr:"counter" json:"-"`

	// unreported says, for each category a side's driver does not count,
	// why: its field above then holds only the other side's share, and a
	// condition reading it must fail rather than judge a partial sum or a
	// zero (see Eval). NewEnv sets it; an Env built by hand without
	// Counter has no counters at all.
	unreported map[string]error
	// hasSetup says the run carries CM set-up times.
	hasSetup bool
	// hasDelivery says the run carries a UD delivery count.
	hasDelivery bool
}

type metricKind int

const (
	anyRun metricKind = iota
	latencyRun
	bandwidthRun
	connectRun
)

// envName documents one name of Env for error messages and reports.
type envName struct {
	name string
	unit string
	kind metricKind
	doc  string
}

var envNames = []envName{
	{"min", "us", latencyRun, "smallest round trip"},
	{"max", "us", latencyRun, "largest round trip"},
	{"mean", "us", latencyRun, "mean round trip"},
	{"stddev", "us", latencyRun, "standard deviation of the round trips"},
	{"p50", "us", latencyRun, "median round trip"},
	{"p90", "us", latencyRun, "90th percentile round trip"},
	{"p99", "us", latencyRun, "99th percentile round trip"},
	{"p999", "us", latencyRun, "99.9th percentile round trip"},
	{"p9999", "us", latencyRun, "99.99th percentile round trip"},
	{"one_way_p50", "us", latencyRun, "median one-way latency (RTT/2; send and write families only)"},
	{"one_way_p99", "us", latencyRun, "99th percentile one-way latency (RTT/2; send and write families only)"},
	{"bw_gbps", "Gb/s", bandwidthRun, "bandwidth, 10^9 bit/s, summed over directions and QPs"},
	{"bw_gib", "GiB/s", bandwidthRun, "bandwidth, 2^30 bytes/s, summed over directions and QPs"},
	{"msg_rate", "msg/s", bandwidthRun, "messages per second, summed over directions and QPs"},
	{"errors", "", anyRun, "completion errors (0 for a run that finished)"},
	{"retries", "", anyRun, "retry-related port counter deltas, both sides"},
	{"size", "B", anyRun, "message size in bytes"},
	{"qps", "", anyRun, "queue pairs"},
	{"mode", "", anyRun, `completion mode, "busy_poll" or "event"`},
	{"op", "", anyRun, `operation, e.g. "write"`},
	{"link_gbps", "Gb/s", anyRun, "the port's link rate, 10^9 bit/s"},
	{portstats.Retransmits, "", anyRun, "transport retransmits (the requester resent after an ACK timeout, or the driver's retry count), both sides"},
	{portstats.SeqErrors, "", anyRun, "packet sequence errors (NAKs received, out-of-order packets), both sides"},
	{portstats.CNPSent, "", anyRun, "congestion notification packets sent, both sides"},
	{portstats.CNPHandled, "", anyRun, "congestion notification packets acted on, both sides"},
	{portstats.ECNMarked, "", anyRun, "RoCE packets received marked ECN congestion experienced, both sides"},
	{portstats.PauseRx, "", anyRun, "pause frames received (the peer stopped us), all priorities, both sides"},
	{portstats.PauseTx, "", anyRun, "pause frames sent (we stopped the peer), all priorities, both sides"},
	{portstats.PauseRxUs, "us", anyRun, "time stopped by pause frames received, both sides"},
	{portstats.PauseTxUs, "us", anyRun, "time the peer was asked to stop by pause frames sent, both sides"},
	{"resolve_addr_p50", "us", anyRun, "median CM address resolution (rdma_resolve_addr), over the QPs; connect: rdma_cm"},
	{"resolve_addr_p99", "us", anyRun, "99th percentile CM address resolution, over the QPs"},
	{"resolve_addr_max", "us", anyRun, "slowest CM address resolution"},
	{"resolve_route_p50", "us", anyRun, "median CM route resolution (rdma_resolve_route), over the QPs"},
	{"resolve_route_p99", "us", anyRun, "99th percentile CM route resolution, over the QPs"},
	{"resolve_route_max", "us", anyRun, "slowest CM route resolution"},
	{"connect_p50", "us", anyRun, "median CM connect (rdma_connect to ESTABLISHED), over the QPs"},
	{"connect_p99", "us", anyRun, "99th percentile CM connect, over the QPs"},
	{"connect_max", "us", anyRun, "slowest CM connect"},
	{"setup_p50", "us", anyRun, "median set-up of a QP through the CM (the three steps together)"},
	{"setup_p99", "us", anyRun, "99th percentile set-up of a QP through the CM"},
	{"setup_max", "us", anyRun, "slowest set-up of a QP through the CM"},
	{"connect_rate", "conn/s", connectRun, "QPs connected per second through the CM, first address resolution to last connection (measure connect)"},
	{"sent", "", anyRun, "UD: messages sent (bandwidth) or round trips begun (latency, warm-up included), over directions and QPs"},
	{"received", "", anyRun, "UD: messages received, or round trips answered within loss_timeout"},
	{"lost", "", anyRun, "UD: messages, or round trips, sent and never received"},
	{"loss_ratio", "", anyRun, "UD: lost / sent, 0 to 1"},
	{"late", "", latencyRun, "UD latency: answers that came after loss_timeout (not lost, not timed)"},
	{"rx_gbps", "Gb/s", bandwidthRun, "UD bandwidth: the receivers' rate, first to last arrival, 10^9 bit/s"},
	{"counter", "", anyRun, `counter("name"): a port counter's delta, both sides`},
}

// deliveryNames are the names that read a UD run's delivery.
var deliveryNames = []string{"sent", "received", "lost", "loss_ratio", "late", "rx_gbps"}

// retryCounters are the counters that move when the transport
// retransmits or a receiver was not ready: rxe's names, then mlx5's.
var retryCounters = []string{
	"completer_retry_err", "rcvd_seq_err", "out_of_seq_request", "duplicate_request",
	"retry_exceeded_err", "retry_rnr_exceeded_err", "rcvd_rnr_err", "send_rnr_err",
	"local_ack_timeout_err", "packet_seq_err", "out_of_sequence", "implied_nak_seq_err",
	"rnr_nak_retry_err",
}

// setupNames are the names that read CM set-up times.
var setupNames = []string{
	"resolve_addr_p50", "resolve_addr_p99", "resolve_addr_max",
	"resolve_route_p50", "resolve_route_p99", "resolve_route_max",
	"connect_p50", "connect_p99", "connect_max",
	"setup_p50", "setup_p99", "setup_max",
}

// knownNames lists the names a threshold may use, in documentation order.
func knownNames() []string {
	out := make([]string, len(envNames))
	for i, n := range envNames {
		out[i] = n.name
	}
	return out
}

func lookupName(name string) (envName, bool) {
	for _, n := range envNames {
		if n.name == name {
			return n, true
		}
	}
	return envName{}, false
}

// Threshold is a compiled pass condition. It keeps its source so reports
// can quote what was judged.
type Threshold struct {
	src      string
	program  *vm.Program
	names    []string // Env names it reads, first use first
	counters []string // names passed to counter() as literals
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
	// Compiled first without AsBool, so a condition that is not true or
	// false is told by its type, not by the compiler's message.
	typed, err := expr.Compile(code, expr.Env(Env{}))
	if err != nil {
		return nil, explainCompileError(src, code, err)
	}
	if k := typed.Node().Type(); k != nil && k.Kind() != reflect.Bool && k.Kind() != reflect.Interface {
		return nil, fmt.Errorf("%q is %s, not true or false; write a comparison such as p99 < 5us", src, typeWord(k))
	}
	program, err := expr.Compile(code, expr.Env(Env{}), expr.AsBool())
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
		known := strings.Replace(strings.Join(knownNames(), ", "), "counter", `counter("name")`, 1)
		return fmt.Errorf("unknown name %s%s; known: %s", name, hint, known)
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
	var idents []string
	ast.Walk(&tree.Node, visitor(func(n ast.Node) {
		switch n := n.(type) {
		case *ast.VariableDeclaratorNode:
			declared[n.Name] = true
		case *ast.CallNode:
			called[n.Callee] = true
		}
	}))
	ast.Walk(&tree.Node, visitor(func(n ast.Node) {
		if id, ok := n.(*ast.IdentifierNode); ok && !called[n] {
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
		switch n := n.(type) {
		case *ast.IdentifierNode:
			if _, ok := lookupName(n.Value); ok && !seen[n.Value] {
				seen[n.Value] = true
				t.names = append(t.names, n.Value)
			}
		case *ast.CallNode:
			id, ok := n.Callee.(*ast.IdentifierNode)
			if !ok || id.Value != "counter" || len(n.Arguments) != 1 {
				return
			}
			if s, ok := n.Arguments[0].(*ast.StringNode); ok && !seen["counter:"+s.Value] {
				seen["counter:"+s.Value] = true
				t.counters = append(t.counters, s.Value)
			}
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
	for _, name := range t.names {
		n, _ := lookupName(name)
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
	for _, name := range t.names {
		if n, _ := lookupName(name); n.kind == k {
			out = append(out, name)
		}
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
	}
	if env.Counter == nil {
		env.Counter = noCounters
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
// calls appear as counter("name"); string names (mode, op), and counters
// and categories the run did not record, are left out.
func (t *Threshold) Values(env Env) map[string]float64 {
	out := map[string]float64{}
	for _, name := range t.names {
		if env.categoryError(name) != nil || env.setupError(name) != nil || env.deliveryError(name) != nil {
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
	return out
}

// Unit is the unit of a threshold name ("us", "Gb/s", "B"), or "" for
// counts and strings.
func Unit(name string) string {
	n, _ := lookupName(name)
	return n.unit
}

// envFields maps a threshold name to its field of Env.
var envFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[Env]()
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("expr"); name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}()

// Value returns the value of a threshold name, as a condition sees it.
func (e Env) Value(name string) (any, bool) {
	i, ok := envFields[name]
	if !ok || name == "counter" {
		return nil, false
	}
	return reflect.ValueOf(e).Field(i).Interface(), true
}

// NewEnv fills an Env from a finished run. linkGbps is the port's rate,
// which the result does not hold.
func NewEnv(res *rdma.Result, linkGbps float64) Env {
	e := Env{LinkGbps: linkGbps, Counter: noCounters}
	if res == nil {
		e.addCategories(nil, nil)
		return e
	}
	e.Size, e.QPs = res.Spec.Size, res.Spec.QPs
	e.Mode, e.Op = res.Spec.Mode.String(), res.Spec.Op.String()
	if l := res.Latency; l != nil {
		us := func(ns float64) float64 { return ns / 1e3 }
		r := l.RTT
		e.Min, e.Max, e.Mean, e.Stddev = us(r.Min), us(r.Max), us(r.Mean), us(r.Stddev)
		e.P50, e.P90, e.P99, e.P999, e.P9999 = us(r.P50), us(r.P90), us(r.P99), us(r.P999), us(r.P9999)
		if o := l.OneWay; o != nil {
			e.OneWayP50, e.OneWayP99 = us(o.P50), us(o.P99)
		}
	}
	if c := res.Connect; c != nil && len(c.QPs) > 0 {
		us := func(ns float64) float64 { return ns / 1e3 }
		e.hasSetup = true
		e.ResolveAddrP50, e.ResolveAddrP99, e.ResolveAddrMax = us(c.ResolveAddr.P50), us(c.ResolveAddr.P99), us(c.ResolveAddr.Max)
		e.ResolveRouteP50, e.ResolveRouteP99, e.ResolveRouteMax = us(c.ResolveRoute.P50), us(c.ResolveRoute.P99), us(c.ResolveRoute.Max)
		e.ConnectP50, e.ConnectP99, e.ConnectMax = us(c.Connect.P50), us(c.Connect.P99), us(c.Connect.Max)
		e.SetupP50, e.SetupP99, e.SetupMax = us(c.Total.P50), us(c.Total.P99), us(c.Total.Max)
		e.ConnectRate = c.PerSecond
	}
	if b := res.Bandwidth; b != nil {
		for _, d := range b.Directions {
			e.BwGbps += d.Gbps()
			e.BwGiB += d.GiBps()
			e.MsgRate += d.MessagesPerSec
			if d.Delivery != nil {
				e.addDelivery(d.Delivery)
				e.RxGbps += d.Delivery.ReceivedGbps()
			}
		}
	}
	if res.Latency != nil && res.Latency.Delivery != nil {
		e.addDelivery(res.Latency.Delivery)
	}
	if e.Sent > 0 {
		e.LossRatio = float64(e.Lost) / float64(e.Sent)
	}
	sides := countedSides(res)
	for _, name := range retryCounters {
		v, _ := counterSum(sides, name)
		e.Retries = addClamped(e.Retries, uint64(v))
	}
	e.addCategories(res, sides)
	if len(sides) > 0 {
		e.Counter = func(name string) (int, error) {
			v, ok := counterSum(sides, name)
			if !ok {
				return 0, fmt.Errorf("counter(%q): no such counter on either side's port (see counters/ and hw_counters/ under /sys/class/infiniband/DEVICE/ports/PORT, and ethtool/ for the netdev's pause statistics)", name)
			}
			return v, nil
		}
	}
	return e
}

// addDelivery adds a UD direction's (or latency run's) counts to e.
func (e *Env) addDelivery(d *rdma.Delivery) {
	e.hasDelivery = true
	e.Sent = addClamped(e.Sent, d.Sent)
	e.Received = addClamped(e.Received, d.Received)
	e.Lost = addClamped(e.Lost, d.Lost)
	e.Late = addClamped(e.Late, d.Late)
}

// addCategories sums the sides' categories into e, and records in
// e.unreported why each category some side lacks cannot be judged.
func (e *Env) addCategories(res *rdma.Result, sides []rdma.SideSummary) {
	e.unreported = map[string]error{}
	ints := map[string]*int{
		portstats.Retransmits: &e.Retransmits, portstats.SeqErrors: &e.SeqErrors,
		portstats.CNPSent: &e.CNPSent, portstats.CNPHandled: &e.CNPHandled, portstats.ECNMarked: &e.ECNMarked,
		portstats.PauseRx: &e.PauseRx, portstats.PauseTx: &e.PauseTx,
	}
	floats := map[string]*float64{portstats.PauseRxUs: &e.PauseRxUs, portstats.PauseTxUs: &e.PauseTxUs}
	for _, cat := range portstats.CategoryNames {
		if len(sides) == 0 {
			e.unreported[cat] = fmt.Errorf("%s: this run recorded no port counters", cat)
			continue
		}
		var why []string
		for i, side := range sides {
			c := side.Counters.Categories
			if !c.Reported(cat) {
				why = append(why, fmt.Sprintf("not reported by the %s (%s): %s", report.SideRole(res, i), sideDevice(res, i, side), c.Why(cat)))
				continue
			}
			v := c.Values[cat]
			if p, ok := ints[cat]; ok {
				*p = addClamped(*p, v)
			} else {
				*floats[cat] += float64(v)
			}
		}
		if len(why) > 0 {
			e.unreported[cat] = fmt.Errorf("%s: %s", cat, strings.Join(why, "; "))
		}
	}
}

// sideDevice names the device of side i, from the endpoint when the side
// did not say.
func sideDevice(res *rdma.Result, i int, side rdma.SideSummary) string {
	if side.Device != "" {
		return side.Device
	}
	if res != nil && i == 0 {
		return res.Requester.Device
	}
	if res != nil && i == 1 {
		return res.Responder.Device
	}
	return "unknown device"
}

// countedSides returns the sides whose counters add up: when both ends of
// a loopback run share one port, its counters saw both ends' traffic
// already, and adding them twice would double every delta.
func countedSides(res *rdma.Result) []rdma.SideSummary {
	s := res.Sides
	rq, rs := res.Requester, res.Responder
	if len(s) == 2 && rq.Device != "" && rq.Device == rs.Device && rq.Port == rs.Port &&
		len(rq.GID) > 0 && bytes.Equal(rq.GID, rs.GID) {
		return s[:1]
	}
	return s
}

// counterSum adds a counter's deltas over the sides; found reports
// whether any side has it.
func counterSum(sides []rdma.SideSummary, name string) (sum int, found bool) {
	dir, base, hasDir := strings.Cut(name, "/")
	if !hasDir {
		base = name
	}
	for _, side := range sides {
		for _, m := range []struct {
			dir string
			m   map[string]uint64
		}{{"counters", side.Counters.Counters}, {"hw_counters", side.Counters.HWCounters}, {"ethtool", side.Counters.Ethtool}} {
			// The netdev's statistics are not the port's: a bare name
			// stays with the port's directories, as it always has.
			if hasDir && dir != m.dir || !hasDir && m.dir == "ethtool" {
				continue
			}
			if v, ok := m.m[base]; ok {
				found = true
				sum = addClamped(sum, v)
			}
		}
	}
	return sum, found
}

func addClamped(a int, b uint64) int {
	if b > uint64(math.MaxInt-a) {
		return math.MaxInt
	}
	return a + int(b)
}

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
