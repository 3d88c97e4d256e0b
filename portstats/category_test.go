package portstats

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func u(v uint64) *uint64 { return &v }

func TestCategorize(t *testing.T) {
	tests := []struct {
		name       string
		src        Source
		want       map[string]uint64
		priorities []PriorityPause
	}{
		{
			name: "mlx5 with per-priority pause",
			src: Source{
				Driver: "mlx5_core", Netdev: "ens1f0np0", NetdevDriver: "mlx5_core",
				HWCounters: map[string]uint64{
					"local_ack_timeout_err": 2, "packet_seq_err": 3, "implied_nak_seq_err": 1, "out_of_sequence": 5,
					"np_cnp_sent": 7, "rp_cnp_handled": 11, "np_ecn_marked_roce_packets": 13, "duplicate_request": 99,
				},
				Ethtool: map[string]uint64{
					"rx_prio3_pause": 100, "tx_prio3_pause": 4, "rx_prio3_pause_duration": 5000, "tx_prio3_pause_duration": 60,
					"rx_global_pause": 1, "tx_global_pause": 0, "rx_global_pause_duration": 10, "tx_global_pause_duration": 0,
					"rx_pause_ctrl_phy": 101, "tx_pause_ctrl_phy": 4,
				},
			},
			// The total (rx_pause_ctrl_phy) is not added to the
			// per-priority counts it already contains.
			want: map[string]uint64{
				Retransmits: 2, SeqErrors: 9, CNPSent: 7, CNPHandled: 11, ECNMarked: 13,
				PauseRx: 101, PauseTx: 4, PauseRxUs: 5010, PauseTxUs: 60,
			},
			priorities: []PriorityPause{
				{Priority: "3", RxFrames: 100, TxFrames: 4, RxUs: u(5000), TxUs: u(60)},
				{Priority: "link", RxFrames: 1, TxFrames: 0, RxUs: u(10), TxUs: u(0)},
			},
		},
		{
			name: "mlx5 firmware with only the pause total",
			src: Source{
				Driver: "mlx5_core", Netdev: "ens1f0np0", NetdevDriver: "mlx5_core",
				HWCounters: map[string]uint64{"local_ack_timeout_err": 0},
				Ethtool:    map[string]uint64{"rx_pause_ctrl_phy": 42, "tx_pause_ctrl_phy": 1},
			},
			want: map[string]uint64{Retransmits: 0, PauseRx: 42, PauseTx: 1},
		},
		{
			name: "bnxt_re, older counter names, bnxt_en pause",
			src: Source{
				Driver: "bnxt_en", Netdev: "ens2f0np0", NetdevDriver: "bnxt_en",
				HWCounters: map[string]uint64{
					"to_retransmits": 6, "seq_err_naks_rcvd": 2, "tx_cnp_pkts": 3, "rx_cnp_pkts": 4, "rx_ecn_marked_pkts": 5,
				},
				Ethtool: map[string]uint64{
					"rx_pfc_ena_frames_pri3": 20, "tx_pfc_ena_frames_pri3": 1,
					"pfc_pri3_rx_duration_us": 700, "pfc_pri3_tx_duration_us": 9,
					"rx_pause_frames": 0, "tx_pause_frames": 0,
				},
			},
			want: map[string]uint64{
				Retransmits: 6, SeqErrors: 2, CNPSent: 3, CNPHandled: 4, ECNMarked: 5,
				PauseRx: 20, PauseTx: 1, PauseRxUs: 700, PauseTxUs: 9,
			},
			priorities: []PriorityPause{
				{Priority: "3", RxFrames: 20, TxFrames: 1, RxUs: u(700), TxUs: u(9)},
				{Priority: "link"},
			},
		},
		{
			name: "bnxt_re, names shared with mlx5 on newer kernels",
			src: Source{
				Driver:     "bnxt_re",
				HWCounters: map[string]uint64{"np_cnp_pkts": 3, "rp_cnp_handled": 4, "np_ecn_marked_roce_packets": 5},
			},
			want: map[string]uint64{CNPSent: 3, CNPHandled: 4, ECNMarked: 5},
		},
		{
			name: "irdma on ice: frames without paused time",
			src: Source{
				Driver: "irdma", Netdev: "ens801f0", NetdevDriver: "ice",
				HWCounters: map[string]uint64{"cnpSent": 1, "cnpHandled": 2, "RxECNMrkd": 3, "RetransSegs": 4, "Nak Sequence Error": 5},
				Ethtool:    map[string]uint64{"rx_priority_3_xoff.nic": 8, "tx_priority_3_xoff.nic": 2, "link_xoff_rx.nic": 1, "link_xoff_tx.nic": 0},
			},
			want: map[string]uint64{Retransmits: 4, SeqErrors: 5, CNPSent: 1, CNPHandled: 2, ECNMarked: 3, PauseRx: 9, PauseTx: 2},
			priorities: []PriorityPause{
				{Priority: "3", RxFrames: 8, TxFrames: 2},
				{Priority: "link", RxFrames: 1},
			},
		},
		{
			name: "rxe: transport only",
			src: Source{
				Driver: "rdma_rxe", Netdev: "veth0",
				HWCounters: map[string]uint64{"completer_retry_err": 3, "rcvd_seq_err": 1, "out_of_seq_request": 2},
			},
			want: map[string]uint64{Retransmits: 3, SeqErrors: 3},
		},
		{
			name: "unknown driver: nothing is guessed",
			src:  Source{Driver: "efa", HWCounters: map[string]uint64{"np_cnp_sent": 1}},
			want: map[string]uint64{},
		},
		{
			name: "ethtool unreadable",
			src:  Source{Driver: "mlx5_core", Netdev: "x", NetdevDriver: "mlx5_core", EthtoolError: "no such device"},
			want: map[string]uint64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Categorize(tt.src)
			if !maps.Equal(c.Values, tt.want) {
				t.Errorf("values = %v, want %v", c.Values, tt.want)
			}
			for _, cat := range CategoryNames {
				_, has := tt.want[cat]
				if c.Reported(cat) != has || slices.Contains(c.Unreported, cat) == has {
					t.Errorf("%s: reported %v, in unreported %v; want reported %v", cat, c.Reported(cat), slices.Contains(c.Unreported, cat), has)
				}
				if why := c.Why(cat); (why == "") != has {
					t.Errorf("Why(%s) = %q with reported %v", cat, why, has)
				}
			}
			if !slices.EqualFunc(c.Priorities, tt.priorities, samePriority) {
				t.Errorf("priorities = %+v, want %+v", c.Priorities, tt.priorities)
			}
		})
	}
}

func samePriority(a, b PriorityPause) bool {
	eq := func(x, y *uint64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Priority == b.Priority && a.RxFrames == b.RxFrames && a.TxFrames == b.TxFrames && eq(a.RxUs, b.RxUs) && eq(a.TxUs, b.TxUs)
}

// The reasons name what is missing, so an operator can tell a driver
// without a counter from a port without a netdev.
func TestWhy(t *testing.T) {
	tests := []struct {
		c    *Categories
		cat  string
		want string
	}{
		{nil, PauseRx, "older rdmarun"},
		{Categorize(Source{Driver: "efa"}), Retransmits, "no counter map for driver efa"},
		{Categorize(Source{Driver: "rdma_rxe"}), CNPSent, "driver rdma_rxe has no counter"},
		{Categorize(Source{Driver: "mlx5_core"}), PauseRx, "no Ethernet netdev"},
		{Categorize(Source{Driver: "rdma_rxe", Netdev: "veth0"}), PauseTx, "no pause counters known for netdev veth0 (driver unknown)"},
		{Categorize(Source{Driver: "irdma", Netdev: "e0", NetdevDriver: "ice", Ethtool: map[string]uint64{}}), PauseRxUs, "counts pause frames but not paused time"},
		{Categorize(Source{Driver: "mlx5_core", Netdev: "e0", NetdevDriver: "mlx5_core", EthtoolError: "boom"}), PauseRx, "ethtool statistics of e0: boom"},
		{Categorize(Source{}), "pause", `"pause" is not a counter category`},
	}
	for _, tt := range tests {
		if got := tt.c.Why(tt.cat); !strings.Contains(got, tt.want) {
			t.Errorf("Why(%s) = %q, want it to contain %q", tt.cat, got, tt.want)
		}
	}
}

// NonZero drops the priorities nothing moved on, and keeps every
// category value, zeros included.
func TestNonZeroCategories(t *testing.T) {
	d := Deltas{Categories: Categorize(Source{
		Driver: "mlx5_core", Netdev: "e0", NetdevDriver: "mlx5_core",
		HWCounters: map[string]uint64{"np_cnp_sent": 0},
		Ethtool:    map[string]uint64{"rx_prio0_pause": 0, "tx_prio0_pause": 0, "rx_prio3_pause": 5, "tx_prio3_pause": 0},
	})}
	nz := d.NonZero()
	if len(nz.Categories.Priorities) != 1 || nz.Categories.Priorities[0].Priority != "3" {
		t.Errorf("priorities after NonZero = %+v, want only priority 3", nz.Categories.Priorities)
	}
	if v, ok := nz.Categories.Values[CNPSent]; !ok || v != 0 {
		t.Errorf("cnp_sent after NonZero = %d, %v; want a reported 0", v, ok)
	}
	if len(d.Categories.Priorities) != 2 {
		t.Errorf("NonZero changed its receiver's priorities: %+v", d.Categories.Priorities)
	}
}
