package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

func complete(t *testing.T, s rdma.TestSpec) rdma.Test {
	t.Helper()
	c, err := s.Complete()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckResult(t *testing.T) {
	lat := complete(t, rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureLatency, Size: 64, QPs: 2, Iterations: 10})
	bw := complete(t, rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Size: 4096, QPs: 2, Iterations: 10, Bidirectional: true})
	goodLat := func() *rdma.Result {
		return &rdma.Result{Spec: lat, Elapsed: time.Millisecond, Sides: make([]rdma.SideSummary, 2),
			Latency: &rdma.LatencyStats{RTT: rdma.Summary{Count: 20, Min: 1000, P50: 2000, P99: 3000, Max: 4000}}}
	}
	goodBW := func() *rdma.Result {
		d := rdma.Direction{Messages: 20, Bytes: 20 * 4096, Seconds: 0.001, BytesPerSecond: 20 * 4096 / 0.001}
		return &rdma.Result{Spec: bw, Elapsed: time.Millisecond, Sides: make([]rdma.SideSummary, 2),
			Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{d, d}}}
	}
	for _, c := range []struct {
		name    string
		want    rdma.Test
		res     func() *rdma.Result
		wantErr string
	}{
		{"latency", lat, goodLat, ""},
		{"bandwidth", bw, goodBW, ""},
		{"no result", lat, func() *rdma.Result { return nil }, "no result"},
		{"another test", bw, goodLat, "asked for"},
		{"samples missing", lat, func() *rdma.Result { r := goodLat(); r.Latency.RTT.Count = 19; return r }, "19 RTT samples, want 20"},
		{"zero latency", lat, func() *rdma.Result { r := goodLat(); r.Latency.RTT.Min = 0; return r }, "zero or out of order"},
		{"no latency", lat, func() *rdma.Result { r := goodLat(); r.Latency = nil; return r }, "no latency stats"},
		{"one side", lat, func() *rdma.Result { r := goodLat(); r.Sides = r.Sides[:1]; return r }, "1 sides"},
		{"no time", lat, func() *rdma.Result { r := goodLat(); r.Elapsed = 0; return r }, "elapsed 0s"},
		{"one direction", bw, func() *rdma.Result {
			r := goodBW()
			r.Bandwidth.Directions = r.Bandwidth.Directions[:1]
			return r
		}, "want 2 directions"},
		{"messages missing", bw, func() *rdma.Result { r := goodBW(); r.Bandwidth.Directions[1].Messages = 19; return r }, "19 messages, want 20"},
		{"no bytes moved", bw, func() *rdma.Result {
			r := goodBW()
			r.Bandwidth.Directions[0].Bytes, r.Bandwidth.Directions[0].BytesPerSecond = 0, 0
			return r
		}, "0 bytes for 20 messages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckResult(c.want, c.res())
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("got %v, want an error with %q", err, c.wantErr)
			}
		})
	}
}
