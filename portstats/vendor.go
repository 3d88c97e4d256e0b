package portstats

import "fmt"

// counterMap names, for one driver family, the hw_counters/ files whose
// deltas add up to each transport category. A category the family has
// no counter for is absent, so it reads as unreported, never as zero.
//
// Where a driver renamed a counter between kernel versions both names
// are listed; only one exists on any given kernel.
type counterMap map[string][]string

// counterMaps are keyed by family (see family). The meanings follow each
// driver's documentation:
//
//   - retransmits: the requester resent after an ACK timeout (mlx5
//     local_ack_timeout_err, bnxt_re to_retransmits), or the driver's own
//     count of retries (rxe completer_retry_err, irdma's TCP segments).
//   - seq_errors: a PSN sequence error, seen as a NAK received by the
//     requester or as an out-of-order packet at the responder.
//   - cnp_sent / cnp_handled: DCQCN congestion notification packets the
//     notification point sent, and the reaction point acted on.
//   - ecn_marked: RoCE packets that arrived with ECN congestion
//     experienced.
var counterMaps = map[string]counterMap{
	"mlx5": {
		Retransmits: {"local_ack_timeout_err"},
		SeqErrors:   {"packet_seq_err", "implied_nak_seq_err", "out_of_sequence"},
		CNPSent:     {"np_cnp_sent"},
		CNPHandled:  {"rp_cnp_handled"},
		ECNMarked:   {"np_ecn_marked_roce_packets"},
	},
	"bnxt_re": {
		Retransmits: {"to_retransmits"},
		SeqErrors:   {"seq_err_naks_rcvd"},
		CNPSent:     {"tx_cnp_pkts", "np_cnp_pkts"},
		CNPHandled:  {"rx_cnp_pkts", "rp_cnp_handled"},
		ECNMarked:   {"rx_ecn_marked_pkts", "np_ecn_marked_roce_packets"},
	},
	"irdma": {
		Retransmits: {"tcpRetransSegs", "RetransSegs"},
		SeqErrors:   {"Nak Sequence Error"},
		CNPSent:     {"cnpSent"},
		CNPHandled:  {"cnpHandled"},
		ECNMarked:   {"RxECNMrkd"},
	},
	"rxe": {
		Retransmits: {"completer_retry_err"},
		SeqErrors:   {"rcvd_seq_err", "out_of_seq_request"},
	},
}

// pauseMap names the ethtool statistics of one netdev driver that count
// pause frames and paused time. Per-priority names hold a %d for the
// priority (0-7); the link-level ones are 802.3x pause, which stops every
// priority at once.
type pauseMap struct {
	rxPrio, txPrio       string // PFC frames per priority
	rxPrioUs, txPrioUs   string // paused time per priority, microseconds
	rxLink, txLink       string // link-level pause frames
	rxLinkUs, txLinkUs   string // link-level paused time, microseconds
	rxTotal, txTotal     string // all pause frames, read only when no other name is present
	durationsUnavailable bool
}

// pauseMaps are keyed by the netdev's driver.
var pauseMaps = map[string]pauseMap{
	// mlx5 counts received and sent pause per priority with the time
	// paused; rx_pause_ctrl_phy counts every pause frame the port took.
	// The driver lists a priority's counters only while PFC is enabled
	// on it, and the global ones only while 802.3x pause is, so a port
	// with neither (or older firmware) reports the total alone.
	"mlx5_core": {
		rxPrio: "rx_prio%d_pause", txPrio: "tx_prio%d_pause",
		rxPrioUs: "rx_prio%d_pause_duration", txPrioUs: "tx_prio%d_pause_duration",
		rxLink: "rx_global_pause", txLink: "tx_global_pause",
		rxLinkUs: "rx_global_pause_duration", txLinkUs: "tx_global_pause_duration",
		rxTotal: "rx_pause_ctrl_phy", txTotal: "tx_pause_ctrl_phy",
	},
	// bnxt_en names PFC frames rx_pfc_ena_frames_priN and keeps the paused
	// time in its extended port statistics.
	"bnxt_en": {
		rxPrio: "rx_pfc_ena_frames_pri%d", txPrio: "tx_pfc_ena_frames_pri%d",
		rxPrioUs: "pfc_pri%d_rx_duration_us", txPrioUs: "pfc_pri%d_tx_duration_us",
		rxLink: "rx_pause_frames", txLink: "tx_pause_frames",
	},
	// ice (the netdev under irdma) counts XOFF frames, the ones that stop
	// a priority; it keeps no paused time.
	"ice": {
		rxPrio: "rx_priority_%d_xoff.nic", txPrio: "tx_priority_%d_xoff.nic",
		rxLink: "link_xoff_rx.nic", txLink: "link_xoff_tx.nic",
		durationsUnavailable: true,
	},
}

// HasPauseMap reports whether the pause counters of a netdev driver are
// known, so a caller can skip reading the ethtool statistics of any
// other: they cost the driver a walk over hundreds of counters and would
// say nothing about pause.
func HasPauseMap(netdevDriver string) bool {
	_, ok := pauseMaps[netdevDriver]
	return ok
}

// family maps an RDMA device's driver to the counter map that names its
// counters. mlx5 and bnxt devices link to their PCI function's driver
// (mlx5_core, bnxt_en); on the auxiliary bus they may link to the RDMA
// driver itself.
func family(driver string) string {
	switch driver {
	case "mlx5_core", "mlx5_ib":
		return "mlx5"
	case "bnxt_en", "bnxt_re":
		return "bnxt_re"
	case "irdma", "ice", "i40e":
		return "irdma"
	case "rdma_rxe":
		return "rxe"
	}
	return ""
}

// names lists every ethtool statistic the map reads.
func (m pauseMap) names() []string {
	var out []string
	for _, pattern := range []string{m.rxPrio, m.txPrio, m.rxPrioUs, m.txPrioUs} {
		if pattern == "" {
			continue
		}
		for p := range priorities {
			out = append(out, fmt.Sprintf(pattern, p))
		}
	}
	for _, name := range []string{m.rxLink, m.txLink, m.rxLinkUs, m.txLinkUs, m.rxTotal, m.txTotal} {
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// priorities is the number of 802.1p priorities PFC can pause.
const priorities = 8

// pauseNames holds, per netdev driver, the ethtool statistics its pause
// map reads: a snapshot keeps only those of the hundreds a NIC reports.
var pauseNames = func() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for driver, m := range pauseMaps {
		set := map[string]bool{}
		for _, n := range m.names() {
			set[n] = true
		}
		out[driver] = set
	}
	return out
}()
