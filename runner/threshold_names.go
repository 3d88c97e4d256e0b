package runner

import (
	"reflect"
	"slices"
	"strings"

	"github.com/rdmarun/rdmarun/portstats"
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

	// Baseline is the baseline's values of this run's test, read as
	// baseline.p99 (see BaselineValues); Regressed and Improved say what
	// runner/compare concluded of one of the test's metrics, comparing the
	// baseline with this report: not regressed(p99). A scenario with a
	// baseline fills them in after its last run (judgeBaseline); NewEnv
	// leaves them empty, and a condition reading them then fails.
	Baseline  BaselineValues                    `expr:"baseline"`
	Regressed func(metric string) (bool, error) `expr:"regressed" json:"-"`
	Improved  func(metric string) (bool, error) `expr:"improved" json:"-"`

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
	// baseline is the baseline's run of this test and its comparison;
	// nil when there is no baseline to read.
	baseline *baselineMatch
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
	// The baseline's values of the run's test, each the mean over the
	// baseline's finished runs of it (its repeats), in the unit of the
	// name without the prefix.
	{"baseline.min", "us", latencyRun, "the baseline's min"},
	{"baseline.max", "us", latencyRun, "the baseline's max"},
	{"baseline.mean", "us", latencyRun, "the baseline's mean"},
	{"baseline.stddev", "us", latencyRun, "the baseline's stddev"},
	{"baseline.p50", "us", latencyRun, "the baseline's p50"},
	{"baseline.p90", "us", latencyRun, "the baseline's p90"},
	{"baseline.p99", "us", latencyRun, "the baseline's p99"},
	{"baseline.p999", "us", latencyRun, "the baseline's p999"},
	{"baseline.p9999", "us", latencyRun, "the baseline's p9999"},
	{"baseline.one_way_p50", "us", latencyRun, "the baseline's one_way_p50"},
	{"baseline.one_way_p99", "us", latencyRun, "the baseline's one_way_p99"},
	{"baseline.bw_gbps", "Gb/s", bandwidthRun, "the baseline's bw_gbps"},
	{"baseline.bw_gib", "GiB/s", bandwidthRun, "the baseline's bw_gib"},
	{"baseline.msg_rate", "msg/s", bandwidthRun, "the baseline's msg_rate"},
	{"regressed", "", anyRun, "regressed(p99): runner/compare judged the metric (p50, p99, p999, bw_gbps or msg_rate) of the run's test regressed against the baseline"},
	{"improved", "", anyRun, "improved(p99): runner/compare judged the metric of the run's test improved against the baseline"},
}

// deliveryNames are the names that read a UD run's delivery.
var deliveryNames = []string{"sent", "received", "lost", "loss_ratio", "late", "rx_gbps"}

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

// knownList is knownNames as an error message lists them: each call
// with its argument, and the baseline's names once.
func knownList() string {
	var out []string
	for _, n := range knownNames() {
		switch {
		case n == "counter":
			out = append(out, `counter("name")`)
		case slices.Contains(compareFuncs, n):
			out = append(out, n+"(NAME)")
		case strings.HasPrefix(n, "baseline."):
			if !slices.Contains(out, "baseline.NAME") {
				out = append(out, "baseline.NAME")
			}
		default:
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

func lookupName(name string) (envName, bool) {
	for _, n := range envNames {
		if n.name == name {
			return n, true
		}
	}
	return envName{}, false
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

// Value returns the value of a threshold name, as a condition sees it:
// baseline.p99 is one, but not counter(), regressed() or baseline alone.
func (e Env) Value(name string) (any, bool) {
	if sub, ok := strings.CutPrefix(name, "baseline."); ok {
		return e.Baseline.value(sub)
	}
	i, ok := envFields[name]
	if !ok {
		return nil, false
	}
	switch v := reflect.ValueOf(e).Field(i); v.Kind() {
	case reflect.Func, reflect.Struct:
		return nil, false
	default:
		return v.Interface(), true
	}
}
