package runner

import (
	"math"
	"net"
	"reflect"
	"testing"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
)

func TestNewEnv(t *testing.T) {
	gid := rdma.GIDAddr(net.ParseIP("::ffff:10.0.0.1"))
	side := func(hw map[string]uint64, c map[string]uint64) rdma.SideSummary {
		return rdma.SideSummary{Counters: portstats.Deltas{HWCounters: hw, Counters: c}}
	}
	res := &rdma.Result{
		Spec: rdma.Test{TestSpec: rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Mode: rdma.ModeEvent, Size: 64, QPs: 2}},
		Latency: &rdma.LatencyStats{
			RTT:    rdma.Summary{Min: 1000, Max: 9000, Mean: 2500, Stddev: 300, P50: 2000, P90: 3000, P99: 5000, P999: 7000, P9999: 8000},
			OneWay: &rdma.Summary{P50: 1000, P99: 2500},
		},
		Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{
			{BytesPerSecond: 1.25e9, MessagesPerSec: 1000},
			{BytesPerSecond: 1 << 30, MessagesPerSec: 500},
		}},
		Requester: rdma.EndpointInfo{Device: "rxe0", Port: 1, GID: gid},
		Responder: rdma.EndpointInfo{Device: "rxe1", Port: 1, GID: rdma.GIDAddr(net.ParseIP("::ffff:10.0.0.2"))},
		Sides: []rdma.SideSummary{
			side(map[string]uint64{"rcvd_seq_err": 2, "duplicate_request": 1, "sent_pkts": 100}, nil),
			side(map[string]uint64{"rnr_nak_retry_err": 4, "duplicate_request": 1}, map[string]uint64{"port_xmit_data": 7}),
		},
	}
	e := NewEnv(res, 25)
	want := Env{
		Min: 1, Max: 9, Mean: 2.5, Stddev: 0.3, P50: 2, P90: 3, P99: 5, P999: 7, P9999: 8,
		OneWayP50: 1, OneWayP99: 2.5,
		BwGbps: 10 + float64(1<<30)*8/1e9, BwGiB: 1.25e9/(1<<30) + 1, MsgRate: 1500,
		Retries: 8, Size: 64, QPs: 2, Mode: "event", Op: "send", LinkGbps: 25,
	}
	got := e
	got.Counter, got.unreported = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NewEnv =\n%+v\nwant\n%+v", got, want)
	}
	for name, want := range map[string]int{"duplicate_request": 2, "hw_counters/duplicate_request": 2, "port_xmit_data": 7, "counters/port_xmit_data": 7, "sent_pkts": 100} {
		if v, err := e.Counter(name); err != nil || v != want {
			t.Errorf("counter(%q) = %d, %v; want %d", name, v, err, want)
		}
	}
	for _, name := range []string{"nope", "counters/sent_pkts", "hw_counters/port_xmit_data"} {
		if _, err := e.Counter(name); err == nil {
			t.Errorf("counter(%q): no error", name)
		}
	}

	// Both ends on one port: its counters already hold both ends' traffic.
	res.Responder = res.Requester
	if e := NewEnv(res, 25); e.Retries != 3 {
		t.Errorf("one port: retries %d, want 3 (counted once)", e.Retries)
	}
	if v, _ := NewEnv(res, 25).Counter("duplicate_request"); v != 1 {
		t.Errorf("one port: duplicate_request %d, want 1", v)
	}

	// Nothing measured: zeros, and counter() is an error rather than 0.
	e = NewEnv(nil, 10)
	if e.LinkGbps != 10 || e.P99 != 0 || e.BwGbps != 0 {
		t.Errorf("NewEnv(nil) = %+v", e)
	}
	if _, err := e.Counter("x"); err == nil {
		t.Error("counter on an empty result gave no error")
	}
}

func TestAddClamped(t *testing.T) {
	if got := addClamped(math.MaxInt-1, 5); got != math.MaxInt {
		t.Errorf("addClamped overflowed: %d", got)
	}
}
