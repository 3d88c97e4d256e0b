package runner

import (
	"maps"
	"net"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
)

// The sides the category tests put together: a ConnectX port, which
// reports every category, and a soft-RoCE port over veth, which has
// transport counters and no pause counters.
func mlx5Side() rdma.SideSummary {
	return rdma.SideSummary{Device: "mlx5_0", Counters: portstats.Deltas{Categories: portstats.Categorize(portstats.Source{
		Driver: "mlx5_core", Netdev: "enp1s0f0", NetdevDriver: "mlx5_core",
		HWCounters: map[string]uint64{
			"local_ack_timeout_err": 3, "packet_seq_err": 1, "out_of_sequence": 4,
			"np_cnp_sent": 40, "rp_cnp_handled": 7, "np_ecn_marked_roce_packets": 9,
		},
		Ethtool: map[string]uint64{
			"rx_prio3_pause": 5, "tx_prio3_pause": 2, "rx_prio3_pause_duration": 600, "tx_prio3_pause_duration": 150,
			"rx_global_pause": 1, "tx_global_pause": 0, "rx_global_pause_duration": 100, "tx_global_pause_duration": 0,
		},
	})}}
}

func rxeSide(device, netdev string) rdma.SideSummary {
	return rdma.SideSummary{Device: device, Counters: portstats.Deltas{Categories: portstats.Categorize(portstats.Source{
		Driver: "rdma_rxe", Netdev: netdev, NetdevDriver: "veth",
		HWCounters: map[string]uint64{"completer_retry_err": 1, "rcvd_seq_err": 2, "out_of_seq_request": 0},
	})}}
}

func categoryResult(requester, responder rdma.SideSummary) *rdma.Result {
	return &rdma.Result{
		Requester: rdma.EndpointInfo{Device: requester.Device, Port: 1, GID: rdma.GIDAddr(net.ParseIP("::ffff:10.0.0.1"))},
		Responder: rdma.EndpointInfo{Device: responder.Device, Port: 1, GID: rdma.GIDAddr(net.ParseIP("::ffff:10.0.0.2"))},
		Sides:     []rdma.SideSummary{requester, responder},
	}
}

// categoryValues reads the categories out of an Env, as a condition
// would see them.
func categoryValues(e Env) map[string]float64 {
	return map[string]float64{
		"retransmits": float64(e.Retransmits), "seq_errors": float64(e.SeqErrors),
		"cnp_sent": float64(e.CNPSent), "cnp_handled": float64(e.CNPHandled), "ecn_marked": float64(e.ECNMarked),
		"pause_rx": float64(e.PauseRx), "pause_tx": float64(e.PauseTx),
		"pause_rx_us": e.PauseRxUs, "pause_tx_us": e.PauseTxUs,
	}
}

func TestNewEnvCategories(t *testing.T) {
	const (
		noPause = "no pause counters known for netdev veth1 (driver veth)"
		noCNP   = "driver rdma_rxe has no counter for it"
		oldSide = "no counter categories from this side (its counters were not read, or it runs an older rdmarun)"
	)
	oldResponder := rxeSide("rxe1", "veth1")
	oldResponder.Counters.Categories = nil
	shared := categoryResult(rxeSide("rxe1", "veth1"), rxeSide("rxe1", "veth1"))
	shared.Responder = shared.Requester

	for _, tc := range []struct {
		name string
		res  *rdma.Result
		want map[string]float64 // every category; the unreported ones hold the other side's share
		// unreported maps a category to its error; the others must have none.
		unreported map[string]string
	}{{
		name: "both sides report every category",
		res:  categoryResult(mlx5Side(), mlx5Side()),
		want: map[string]float64{
			"retransmits": 6, "seq_errors": 10, "cnp_sent": 80, "cnp_handled": 14, "ecn_marked": 18,
			"pause_rx": 12, "pause_tx": 4, "pause_rx_us": 1400, "pause_tx_us": 300,
		},
	}, {
		name: "the responder has no pause or congestion counters",
		res:  categoryResult(mlx5Side(), rxeSide("rxe1", "veth1")),
		want: map[string]float64{
			"retransmits": 4, "seq_errors": 7, "cnp_sent": 40, "cnp_handled": 7, "ecn_marked": 9,
			"pause_rx": 6, "pause_tx": 2, "pause_rx_us": 700, "pause_tx_us": 150,
		},
		unreported: map[string]string{
			"cnp_sent":    "cnp_sent: not reported by the responder (rxe1): " + noCNP,
			"cnp_handled": "cnp_handled: not reported by the responder (rxe1): " + noCNP,
			"ecn_marked":  "ecn_marked: not reported by the responder (rxe1): " + noCNP,
			"pause_rx":    "pause_rx: not reported by the responder (rxe1): " + noPause,
			"pause_tx":    "pause_tx: not reported by the responder (rxe1): " + noPause,
			"pause_rx_us": "pause_rx_us: not reported by the responder (rxe1): " + noPause,
			"pause_tx_us": "pause_tx_us: not reported by the responder (rxe1): " + noPause,
		},
	}, {
		name: "neither side has pause counters: both reasons",
		res:  categoryResult(rxeSide("rxe0", "veth0"), rxeSide("rxe1", "veth1")),
		want: map[string]float64{
			"retransmits": 2, "seq_errors": 4, "cnp_sent": 0, "cnp_handled": 0, "ecn_marked": 0,
			"pause_rx": 0, "pause_tx": 0, "pause_rx_us": 0, "pause_tx_us": 0,
		},
		unreported: map[string]string{
			"cnp_sent":    "cnp_sent: not reported by the requester (rxe0): " + noCNP + "; not reported by the responder (rxe1): " + noCNP,
			"cnp_handled": "cnp_handled: not reported by the requester (rxe0): " + noCNP + "; not reported by the responder (rxe1): " + noCNP,
			"ecn_marked":  "ecn_marked: not reported by the requester (rxe0): " + noCNP + "; not reported by the responder (rxe1): " + noCNP,
			"pause_rx":    "pause_rx: not reported by the requester (rxe0): no pause counters known for netdev veth0 (driver veth); not reported by the responder (rxe1): " + noPause,
			"pause_tx":    "pause_tx: not reported by the requester (rxe0): no pause counters known for netdev veth0 (driver veth); not reported by the responder (rxe1): " + noPause,
			"pause_rx_us": "pause_rx_us: not reported by the requester (rxe0): no pause counters known for netdev veth0 (driver veth); not reported by the responder (rxe1): " + noPause,
			"pause_tx_us": "pause_tx_us: not reported by the requester (rxe0): no pause counters known for netdev veth0 (driver veth); not reported by the responder (rxe1): " + noPause,
		},
	}, {
		name: "an older responder sent no categories",
		res:  categoryResult(mlx5Side(), oldResponder),
		want: map[string]float64{
			"retransmits": 3, "seq_errors": 5, "cnp_sent": 40, "cnp_handled": 7, "ecn_marked": 9,
			"pause_rx": 6, "pause_tx": 2, "pause_rx_us": 700, "pause_tx_us": 150,
		},
		unreported: func() map[string]string {
			m := map[string]string{}
			for _, cat := range portstats.CategoryNames {
				m[cat] = cat + ": not reported by the responder (rxe1): " + oldSide
			}
			return m
		}(),
	}, {
		name: "both ends on one port count it once",
		res:  shared,
		want: map[string]float64{
			"retransmits": 1, "seq_errors": 2, "cnp_sent": 0, "cnp_handled": 0, "ecn_marked": 0,
			"pause_rx": 0, "pause_tx": 0, "pause_rx_us": 0, "pause_tx_us": 0,
		},
		unreported: map[string]string{
			"cnp_sent":    "cnp_sent: not reported by the requester (rxe1): " + noCNP,
			"cnp_handled": "cnp_handled: not reported by the requester (rxe1): " + noCNP,
			"ecn_marked":  "ecn_marked: not reported by the requester (rxe1): " + noCNP,
			"pause_rx":    "pause_rx: not reported by the requester (rxe1): no pause counters known for netdev veth1 (driver veth)",
			"pause_tx":    "pause_tx: not reported by the requester (rxe1): no pause counters known for netdev veth1 (driver veth)",
			"pause_rx_us": "pause_rx_us: not reported by the requester (rxe1): no pause counters known for netdev veth1 (driver veth)",
			"pause_tx_us": "pause_tx_us: not reported by the requester (rxe1): no pause counters known for netdev veth1 (driver veth)",
		},
	}, {
		name: "no counters read at all",
		res:  &rdma.Result{},
		want: map[string]float64{
			"retransmits": 0, "seq_errors": 0, "cnp_sent": 0, "cnp_handled": 0, "ecn_marked": 0,
			"pause_rx": 0, "pause_tx": 0, "pause_rx_us": 0, "pause_tx_us": 0,
		},
		unreported: func() map[string]string {
			m := map[string]string{}
			for _, cat := range portstats.CategoryNames {
				m[cat] = cat + ": this run recorded no port counters"
			}
			return m
		}(),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEnv(tc.res, 25)
			if got := categoryValues(e); !maps.Equal(got, tc.want) {
				t.Errorf("categories %v\nwant %v", got, tc.want)
			}
			for _, cat := range portstats.CategoryNames {
				err := e.categoryError(cat)
				want, unreported := tc.unreported[cat]
				switch {
				case !unreported && err != nil:
					t.Errorf("%s: %v, want none", cat, err)
				case unreported && (err == nil || err.Error() != want):
					t.Errorf("%s: %v\nwant %s", cat, err, want)
				}
			}
		})
	}
}

func TestThresholdOnCategories(t *testing.T) {
	mlx5 := NewEnv(categoryResult(mlx5Side(), mlx5Side()), 100)
	mixed := NewEnv(categoryResult(mlx5Side(), rxeSide("rxe1", "veth1")), 100)
	const pauseWhy = "not reported by the responder (rxe1): no pause counters known for netdev veth1 (driver veth)"
	for _, tc := range []struct {
		src  string
		env  Env
		want bool
		err  string
	}{
		{src: "pause_rx == 0", env: mlx5, want: false},
		{src: "pause_rx == 12 && pause_tx == 4", env: mlx5, want: true},
		{src: "cnp_sent < 100", env: mlx5, want: true},
		{src: "cnp_sent < 80", env: mlx5, want: false},
		{src: "cnp_handled == 14 && ecn_marked == 18", env: mlx5, want: true},
		// 1400us of paused time: the duration literal is microseconds.
		{src: "pause_rx_us < 1ms", env: mlx5, want: false},
		{src: "pause_rx_us < 1.5ms && pause_tx_us == 300us", env: mlx5, want: true},
		{src: "retransmits + seq_errors <= 16", env: mlx5, want: true},
		// The requester's pause moved; the responder cannot say whether
		// its own did, so neither a pass nor a fail would be honest.
		{src: "pause_rx == 0", env: mixed, err: `threshold "pause_rx == 0": pause_rx: ` + pauseWhy},
		{src: "pause_rx_us < 1ms", env: mixed, err: `threshold "pause_rx_us < 1ms": pause_rx_us: ` + pauseWhy},
		{src: "cnp_sent < 100", env: mixed, err: `threshold "cnp_sent < 100": cnp_sent: not reported by the responder (rxe1): driver rdma_rxe has no counter for it`},
		// Not read only when the other branch decides: a condition
		// naming an unreported category is never judged.
		{src: "retransmits > 0 || pause_tx == 0", env: mixed, err: `threshold "retransmits > 0 || pause_tx == 0": pause_tx: ` + pauseWhy},
		{src: "retransmits == 4 && seq_errors == 7", env: mixed, want: true},
		// A hand-made Env without counters has no categories either.
		{src: "pause_rx == 0", env: Env{}, err: `threshold "pause_rx == 0": pause_rx: this run recorded no port counters`},
		{src: "retransmits == 0", env: NewEnv(nil, 0), err: `threshold "retransmits == 0": retransmits: this run recorded no port counters`},
	} {
		th, err := CompileThreshold(tc.src)
		if err != nil {
			t.Errorf("CompileThreshold(%q): %v", tc.src, err)
			continue
		}
		got, err := th.Eval(tc.env)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || got {
				t.Errorf("Eval(%q) = %v, %v\nwant error %s", tc.src, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Eval(%q) = %v, %v; want %v", tc.src, got, err, tc.want)
		}
	}
}

// A report shows what a verdict saw: a category a side lacks is left out
// rather than shown as the other side's share or a zero.
func TestCategoryValuesLeaveOutUnreported(t *testing.T) {
	env := NewEnv(categoryResult(mlx5Side(), rxeSide("rxe1", "veth1")), 100)
	th := MustCompileThreshold("retransmits < 10 && pause_rx == 0 && pause_rx_us < 1ms")
	want := map[string]float64{"retransmits": 4}
	if got := th.Values(env); !maps.Equal(got, want) {
		t.Errorf("Values() = %v, want %v", got, want)
	}
	for name, unit := range map[string]string{"pause_rx_us": "us", "pause_tx_us": "us", "pause_rx": "", "cnp_sent": ""} {
		if got := Unit(name); got != unit {
			t.Errorf("Unit(%q) = %q, want %q", name, got, unit)
		}
	}
}

// counter("ethtool/NAME") reads the netdev's pause statistics; a bare
// name stays with the port's counters.
func TestCounterEthtool(t *testing.T) {
	side := mlx5Side()
	side.Counters.Ethtool = map[string]uint64{"rx_prio3_pause": 5}
	side.Counters.HWCounters = map[string]uint64{"np_cnp_sent": 40}
	e := NewEnv(categoryResult(side, rxeSide("rxe1", "veth1")), 100)
	if v, err := e.Counter("ethtool/rx_prio3_pause"); err != nil || v != 5 {
		t.Errorf(`counter("ethtool/rx_prio3_pause") = %d, %v; want 5`, v, err)
	}
	for _, name := range []string{"rx_prio3_pause", "ethtool/np_cnp_sent", "hw_counters/rx_prio3_pause"} {
		if _, err := e.Counter(name); err == nil || !strings.Contains(err.Error(), "ethtool/") {
			t.Errorf("counter(%q): %v, want an error naming ethtool/", name, err)
		}
	}
}
