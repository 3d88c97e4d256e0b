package report

import (
	"slices"
	"testing"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
)

// One side per driver family the report has to render differently: all
// categories with paused time per priority (mlx5), pause frames without
// paused time (ice under irdma), no pause counters (rxe over veth) and
// no categories at all (an older responder). line is the --verbose text,
// quiet the default one: only the counts that moved, or no line at all.
func TestSideCategories(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cats  *portstats.Categories
		line  string
		quiet string
		props []junitProperty
	}{{
		name: "mlx5",
		cats: portstats.Categorize(portstats.Source{
			Driver: "mlx5_core", Netdev: "enp1s0f0", NetdevDriver: "mlx5_core",
			HWCounters: map[string]uint64{"local_ack_timeout_err": 3, "packet_seq_err": 1, "np_cnp_sent": 40, "rp_cnp_handled": 7, "np_ecn_marked_roce_packets": 9},
			Ethtool: map[string]uint64{
				"rx_prio3_pause": 5, "tx_prio3_pause": 2, "rx_prio3_pause_duration": 600, "tx_prio3_pause_duration": 150,
				"rx_prio0_pause": 0, "tx_prio0_pause": 0, "rx_prio0_pause_duration": 0, "tx_prio0_pause_duration": 0,
			},
		}),
		line:  "counters mlx5_0 (requester): retransmits 3, seq_errors 1, cnp_sent 40, cnp_handled 7, ecn_marked 9, pause_rx 5, pause_tx 2, pause_rx_us 600, pause_tx_us 150; pause prio3: rx 5, tx 2 (paused rx 600us, tx 150us)",
		quiet: "counters mlx5_0 (requester): retransmits 3, seq_errors 1, cnp_sent 40, cnp_handled 7, ecn_marked 9, pause_rx 5, pause_tx 2, pause_rx_us 600, pause_tx_us 150; pause prio3: rx 5, tx 2 (paused rx 600us, tx 150us)",
		props: []junitProperty{
			prop("requester_retransmits", "3"), prop("requester_seq_errors", "1"), prop("requester_cnp_sent", "40"), prop("requester_cnp_handled", "7"), prop("requester_ecn_marked", "9"),
			prop("requester_pause_rx", "5"), prop("requester_pause_tx", "2"), prop("requester_pause_rx_us", "600"), prop("requester_pause_tx_us", "150"),
			prop("requester_pause_prio3", "rx 5, tx 2 (paused rx 600us, tx 150us)"),
		},
	}, {
		name: "ice keeps no paused time",
		cats: portstats.Categorize(portstats.Source{
			Driver: "irdma", Netdev: "ens1", NetdevDriver: "ice",
			HWCounters: map[string]uint64{"tcpRetransSegs": 0, "cnpSent": 1, "cnpHandled": 0, "RxECNMrkd": 4},
			Ethtool:    map[string]uint64{"link_xoff_rx.nic": 2, "link_xoff_tx.nic": 0},
		}),
		line:  "counters mlx5_0 (requester): retransmits 0, cnp_sent 1, cnp_handled 0, ecn_marked 4, pause_rx 2, pause_tx 0; pause link: rx 2, tx 0 (not reported: seq_errors, pause_rx_us, pause_tx_us)",
		quiet: "counters mlx5_0 (requester): cnp_sent 1, ecn_marked 4, pause_rx 2; pause link: rx 2, tx 0",
		props: []junitProperty{
			prop("requester_retransmits", "0"), prop("requester_cnp_sent", "1"), prop("requester_cnp_handled", "0"), prop("requester_ecn_marked", "4"),
			prop("requester_pause_rx", "2"), prop("requester_pause_tx", "0"), prop("requester_pause_link", "rx 2, tx 0"),
			prop("requester_unreported", "seq_errors, pause_rx_us, pause_tx_us"),
		},
	}, {
		name: "rxe over veth",
		cats: portstats.Categorize(portstats.Source{
			Driver: "rdma_rxe", Netdev: "veth0", NetdevDriver: "veth",
			HWCounters: map[string]uint64{"completer_retry_err": 0, "rcvd_seq_err": 2},
		}),
		line:  "counters mlx5_0 (requester): retransmits 0, seq_errors 2 (not reported: cnp_sent, cnp_handled, ecn_marked, pause_*)",
		quiet: "counters mlx5_0 (requester): seq_errors 2",
		props: []junitProperty{
			prop("requester_retransmits", "0"), prop("requester_seq_errors", "2"),
			prop("requester_unreported", "cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us"),
		},
	}, {
		// What make demo's soft-RoCE runs report, two sides a run.
		name: "rxe over veth, nothing moved",
		cats: portstats.Categorize(portstats.Source{
			Driver: "rdma_rxe", Netdev: "veth0", NetdevDriver: "veth",
			HWCounters: map[string]uint64{"completer_retry_err": 0, "rcvd_seq_err": 0},
		}),
		line: "counters mlx5_0 (requester): retransmits 0, seq_errors 0 (not reported: cnp_sent, cnp_handled, ecn_marked, pause_*)",
		props: []junitProperty{
			prop("requester_retransmits", "0"), prop("requester_seq_errors", "0"),
			prop("requester_unreported", "cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us"),
		},
	}, {
		name: "an unknown driver reports nothing",
		cats: portstats.Categorize(portstats.Source{Driver: "siw"}),
		line: "counters mlx5_0 (requester): none reported (not reported: retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_*)",
		props: []junitProperty{
			prop("requester_unreported", "retransmits, seq_errors, cnp_sent, cnp_handled, ecn_marked, pause_rx, pause_tx, pause_rx_us, pause_tx_us"),
		},
	}, {
		name:  "an older responder",
		line:  "counters mlx5_0 (requester): no counter categories from this side (its counters were not read, or it runs an older rdmarun)",
		props: []junitProperty{prop("requester_categories", "none: no counter categories from this side (its counters were not read, or it runs an older rdmarun)")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			run := Run{Result: &rdma.Result{Sides: []rdma.SideSummary{{Device: "mlx5_0", Counters: portstats.Deltas{Categories: tc.cats}}}}}
			sides := runCategories(run)
			if len(sides) != 1 {
				t.Fatalf("%d sides, want 1", len(sides))
			}
			if got := sides[0].line(true); got != tc.line {
				t.Errorf("verbose line\n%s\nwant\n%s", got, tc.line)
			}
			if got := sides[0].line(false); got != tc.quiet {
				t.Errorf("quiet line\n%q\nwant\n%q", got, tc.quiet)
			}
			if got := categoryProperties(run); !slices.Equal(got, tc.props) {
				t.Errorf("properties\n%v\nwant\n%v", got, tc.props)
			}
		})
	}
}

// A run without a result or without sides shows no counters; one with
// two sides names them requester and responder, in that order.
func TestRunCategoriesSides(t *testing.T) {
	if got := runCategories(Run{}); got != nil {
		t.Errorf("no result: %v", got)
	}
	if got := runCategories(Run{Result: &rdma.Result{}}); got != nil {
		t.Errorf("no sides: %v", got)
	}
	got := runCategories(Run{Result: &rdma.Result{Sides: []rdma.SideSummary{{Device: "rxe1"}, {Device: "rxe0"}}}})
	if len(got) != 2 || got[0].Role != "requester" || got[0].Device != "rxe1" || got[1].Role != "responder" || got[1].Device != "rxe0" {
		t.Errorf("sides %+v", got)
	}
}
