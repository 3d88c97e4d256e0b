package collector

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/internal/promtooltest"
)

// The "roce" tree lays devices out as the kernel does, the infiniband
// class beside the net class, so a RoCE port's GID 0 names its netdev and
// the netdev's device links to its driver. Its ethtool/ directory holds
// each netdev's `ethtool -S` text, which the collector reads in place of
// the ioctl. Devices: mlx5_0 (RoCE, PFC and paused time), mlx5_1
// (InfiniBand, no netdev), bnxt_re0 (PFC frames and time, link pause
// frames), irdma0 over ice (XOFF frames, no time) and rxe0 over virtio
// (no pause counters at all).
var roceRoot = filepath.Join("testdata", "roce", "class", "infiniband")

// savedEthtool reads the saved statistics of a netdev, noting every
// netdev asked for in calls when it is not nil.
func savedEthtool(calls *[]string) func(string) (map[string]uint64, error) {
	var mu sync.Mutex
	return func(netdev string) (map[string]uint64, error) {
		if calls != nil {
			mu.Lock()
			*calls = append(*calls, netdev)
			mu.Unlock()
		}
		b, err := os.ReadFile(filepath.Join("testdata", "roce", "ethtool", netdev))
		if err != nil {
			return nil, err
		}
		return ethtool.Parse(string(b))
	}
}

func roceCollector(t *testing.T, calls *[]string) *PortCollector {
	t.Helper()
	c := NewPortCollector(roceRoot, nil)
	c.ReadEthtool = savedEthtool(calls)
	return c
}

func TestCategoriesExposition(t *testing.T) {
	golden.Check(t, "roce.prom", exposition(t, roceCollector(t, nil)))
}

// TestCategoriesByDriver checks each device's category series against the
// counters and statistics its fixture holds: the series listed and no
// other. Keys are "category" for transport events and "direction/priority"
// for pause.
func TestCategoriesByDriver(t *testing.T) {
	got := gather(t, roceCollector(t, nil))
	zeroPrio := func(prios ...string) map[string]float64 {
		m := map[string]float64{}
		for _, p := range prios {
			m["rx/"+p], m["tx/"+p] = 0, 0
		}
		return m
	}
	all := []string{"0", "1", "2", "3", "4", "5", "6", "7"}
	with := func(m map[string]float64, kv map[string]float64) map[string]float64 {
		maps.Copy(m, kv)
		return m
	}
	for _, tc := range []struct {
		device          string
		events          map[string]float64
		frames, seconds map[string]float64
	}{{
		device: "mlx5_0",
		// seq_errors: packet_seq_err 1 + out_of_sequence 4 + implied_nak_seq_err 0.
		events:  map[string]float64{"retransmits": 3, "seq_errors": 5, "cnp_sent": 1520, "cnp_handled": 1318, "ecn_marked": 1600},
		frames:  with(zeroPrio("0", "link"), map[string]float64{"rx/3": 48211, "tx/3": 10}),
		seconds: with(zeroPrio("0", "link"), map[string]float64{"rx/3": 2.555183, "tx/3": 0.0005}),
	}, {
		device: "mlx5_1",
		events: map[string]float64{"retransmits": 0, "seq_errors": 2},
	}, {
		device:  "bnxt_re0",
		events:  map[string]float64{"retransmits": 7, "seq_errors": 2, "cnp_sent": 310, "cnp_handled": 298, "ecn_marked": 305},
		frames:  with(zeroPrio(append(all, "link")...), map[string]float64{"rx/3": 1200, "tx/3": 40, "rx/link": 6}),
		seconds: with(zeroPrio(all...), map[string]float64{"rx/3": 0.09, "tx/3": 0.003}),
	}, {
		device: "irdma0",
		events: map[string]float64{"cnp_sent": 12, "cnp_handled": 10, "ecn_marked": 14},
		frames: with(zeroPrio(append(all, "link")...), map[string]float64{"rx/3": 700, "tx/3": 5}),
	}, {
		device: "rxe0",
		// seq_errors: rcvd_seq_err 3 + out_of_seq_request 2.
		events: map[string]float64{"retransmits": 1, "seq_errors": 5},
	}} {
		t.Run(tc.device, func(t *testing.T) {
			for family, want := range map[string]map[string]float64{
				"rdmarun_port_transport_events_total": tc.events,
				"rdmarun_port_pause_frames_total":     tc.frames,
				"rdmarun_port_pause_seconds_total":    tc.seconds,
			} {
				have := map[string]float64{}
				for _, s := range got[family] {
					if s.labels["device"] != tc.device || s.labels["port"] != "1" {
						continue
					}
					key := s.labels["category"]
					if key == "" {
						key = s.labels["direction"] + "/" + s.labels["priority"]
					}
					have[key] = s.value
				}
				if want == nil {
					want = map[string]float64{}
				}
				if !maps.Equal(have, want) {
					t.Errorf("%s = %v, want %v", family, have, want)
				}
			}
		})
	}
	if e := got["rdmarun_port_collector_errors"]; len(e) != 1 || e[0].value != 0 {
		t.Errorf("rdmarun_port_collector_errors = %v, want 0", e)
	}
}

// TestCategoriesReadEthtoolOnlyWithPauseMap: the collector asks only the
// netdevs whose driver has pause counters, so a host with rxe over veth
// or virtio pays nothing for them, and an InfiniBand port has no netdev.
func TestCategoriesReadEthtoolOnlyWithPauseMap(t *testing.T) {
	var calls []string
	gather(t, roceCollector(t, &calls))
	slices.Sort(calls)
	if want := []string{"ens1f0np0", "ens2f0np0", "ens3f0"}; !slices.Equal(calls, want) {
		t.Errorf("ethtool read for %v, want %v (not eth0 under rxe0, whose driver is virtio_net)", calls, want)
	}
}

// TestCategoriesEthtoolError: a netdev whose statistics cannot be read
// costs its port's pause series only, and counts as a collector error.
func TestCategoriesEthtoolError(t *testing.T) {
	c := NewPortCollector(roceRoot, nil)
	saved := savedEthtool(nil)
	c.ReadEthtool = func(netdev string) (map[string]uint64, error) {
		if netdev == "ens1f0np0" {
			return nil, errors.New("no such device")
		}
		return saved(netdev)
	}
	got := gather(t, c)
	if e := got["rdmarun_port_collector_errors"]; len(e) != 1 || e[0].value != 1 {
		t.Errorf("rdmarun_port_collector_errors = %v, want 1", e)
	}
	devices := func(family string) map[string]bool {
		out := map[string]bool{}
		for _, s := range got[family] {
			out[s.labels["device"]] = true
		}
		return out
	}
	if d := devices("rdmarun_port_pause_frames_total"); d["mlx5_0"] || !d["bnxt_re0"] || !d["irdma0"] {
		t.Errorf("pause frames for devices %v, want bnxt_re0 and irdma0 but not mlx5_0", d)
	}
	if d := devices("rdmarun_port_pause_seconds_total"); d["mlx5_0"] || !d["bnxt_re0"] {
		t.Errorf("pause seconds for devices %v, want bnxt_re0 but not mlx5_0", d)
	}
	if v, ok := find(got["rdmarun_port_transport_events_total"], map[string]string{"device": "mlx5_0", "port": "1", "category": "cnp_sent"}); !ok || v != 1520 {
		t.Errorf("mlx5_0 cnp_sent = %v (found %v), want 1520: the transport counters do not need ethtool", v, ok)
	}
}

// TestCategoriesPauseTotalOnly: an mlx5 netdev that lists only
// rx/tx_pause_ctrl_phy (testdata/ethtool-totals, saved from firmware
// without per-priority pause counters) exports its frames under
// priority "all", so they sum to pause_rx and pause_tx as every other
// port's per-priority series do; it has no paused time, and the other
// ports' series are as before.
func TestCategoriesPauseTotalOnly(t *testing.T) {
	c := NewPortCollector(roceRoot, nil)
	saved := savedEthtool(nil)
	c.ReadEthtool = func(netdev string) (map[string]uint64, error) {
		if netdev != "ens1f0np0" {
			return saved(netdev)
		}
		b, err := os.ReadFile(filepath.Join("testdata", "ethtool-totals", netdev))
		if err != nil {
			return nil, err
		}
		return ethtool.Parse(string(b))
	}
	got := gather(t, c)
	series := func(family, device string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range got[family] {
			if s.labels["device"] == device && s.labels["port"] == "1" {
				out[s.labels["direction"]+"/"+s.labels["priority"]] = s.value
			}
		}
		return out
	}
	if have, want := series("rdmarun_port_pause_frames_total", "mlx5_0"), map[string]float64{"rx/all": 48211, "tx/all": 10}; !maps.Equal(have, want) {
		t.Errorf("mlx5_0 pause frames = %v, want %v", have, want)
	}
	if have := series("rdmarun_port_pause_seconds_total", "mlx5_0"); len(have) != 0 {
		t.Errorf("mlx5_0 pause seconds = %v, want none: the total counts no time", have)
	}
	for _, device := range []string{"bnxt_re0", "irdma0"} {
		for prio, v := range series("rdmarun_port_pause_frames_total", device) {
			if strings.HasSuffix(prio, "/all") {
				t.Errorf("%s has %s = %v; only a port without per-priority counters has all", device, prio, v)
			}
		}
		if len(series("rdmarun_port_pause_frames_total", device)) == 0 {
			t.Errorf("%s lost its pause frames", device)
		}
	}
	if e := got["rdmarun_port_collector_errors"]; len(e) != 1 || e[0].value != 0 {
		t.Errorf("rdmarun_port_collector_errors = %v, want 0", e)
	}
}

func TestCategoriesLint(t *testing.T) {
	c := roceCollector(t, nil)
	text := exposition(t, c)
	for _, family := range []string{"rdmarun_port_transport_events_total", "rdmarun_port_pause_frames_total", "rdmarun_port_pause_seconds_total"} {
		if !slices.Contains(slices.Collect(maps.Keys(gather(t, c))), family) {
			t.Fatalf("no %s over the roce tree:\n%s", family, text)
		}
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if out, err := promtooltest.CheckMetrics(t, text); err != nil || out != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
