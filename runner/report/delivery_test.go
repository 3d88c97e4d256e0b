package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/rdma"
)

// udFixture is a report of UD runs: a latency run that lost a round trip
// (another answer came late), a bandwidth run that lost 3 of 1000
// messages, and a latency run on a silent path.
func udFixture(t *testing.T) *Report {
	complete := func(s rdma.TestSpec) rdma.Test {
		c, err := s.Complete()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	latSpec := complete(rdma.TestSpec{Op: rdma.OpSend, QPType: rdma.UD, Size: 1024, Iterations: 1000})
	rtt := rdma.Summary{Count: 998, Min: 40000, Max: 90000, Mean: 46000, Stddev: 3000, P50: 45000, P90: 50000, P99: 80000, P999: 85000, P9999: 90000}
	half := rtt.Half()
	lat := &rdma.Result{Spec: latSpec, Requester: rdma.EndpointInfo{Device: "rxe1"}, Responder: rdma.EndpointInfo{Device: "rxe0"},
		Latency: &rdma.LatencyStats{RTT: rtt, OneWay: &half, Delivery: &rdma.Delivery{Sent: 1100, Received: 1098, Lost: 1, LossRatio: 1.0 / 1100, Late: 1}}}
	bwSpec := complete(rdma.TestSpec{Op: rdma.OpSendImm, QPType: rdma.UD, Measure: rdma.MeasureBandwidth, Iterations: 1000})
	d := rdma.Direction{From: "rxe1", To: "rxe0", Messages: 1000, Bytes: 1024000, Seconds: 0.03, BytesPerSecond: 1024000 / 0.03, MessagesPerSec: 1000 / 0.03,
		Delivery: &rdma.Delivery{Sent: 1000, Received: 997, Lost: 3, LossRatio: 0.003, ReceivedBytesPerSecond: 3.3e7}}
	bw := &rdma.Result{Spec: bwSpec, Requester: lat.Requester, Responder: lat.Responder,
		Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{d}, PerQP: [][]rdma.Direction{{d}}}}
	silentSpec := complete(rdma.TestSpec{Op: rdma.OpSend, QPType: rdma.UD, Mode: rdma.ModeEvent, Iterations: 1000,
		StallTimeout: rdma.Duration(2 * time.Second), LossTimeout: rdma.Duration(200 * time.Millisecond)})
	silent := &rdma.Result{Spec: silentSpec, Requester: lat.Requester, Responder: lat.Responder,
		Latency: &rdma.LatencyStats{Delivery: &rdma.Delivery{Sent: 11, Lost: 11, LossRatio: 1, Silent: true}}}
	start := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	r := &Report{Schema: Schema, Tool: "rdmarun test", Scenario: "ud", File: "ud.yaml", Peer: "loopback", Started: start, Finished: start.Add(5 * time.Second),
		Runs: []Run{
			{Case: "ud-send", Index: 0, Status: Passed, Spec: latSpec, Result: lat, Seconds: 1,
				Verdicts: []Verdict{{Expr: "loss_ratio < 0.01", Passed: true, Values: map[string]float64{"loss_ratio": 1.0 / 1100}}}},
			{Case: "ud-send", Index: 1, Status: Failed, Spec: bwSpec, Result: bw, Seconds: 1,
				Verdicts: []Verdict{{Expr: "lost == 0", Passed: false, Values: map[string]float64{"lost": 3}}}},
			{Case: "ud-send", Index: 2, Status: Failed, Spec: silentSpec, Result: silent, Seconds: 2.3,
				Verdicts: []Verdict{{Expr: "lost == 0", Passed: false, Values: map[string]float64{"lost": 11}}}},
		}}
	r.Tally()
	return r
}

// TestUDDelivery: a UD run's delivery is printed after its case's table
// (text and compact), matches the schema, and survives a JSON round trip.
func TestUDDelivery(t *testing.T) {
	for name, write := range map[string]func(*bytes.Buffer, *Report) error{
		"ud.txt":         func(b *bytes.Buffer, r *Report) error { return Text(b, r) },
		"ud.compact.txt": func(b *bytes.Buffer, r *Report) error { return Compact(b, r) },
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := write(&b, udFixture(t)); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name, b.Bytes())
		})
	}
	var b bytes.Buffer
	if err := JSON(&b, udFixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(t, compileSchema(t), b.Bytes()); err != nil {
		t.Fatalf("the UD report does not match schema.json:\n%v", err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if d := back.Runs[0].Result.Latency.Delivery; d == nil || d.Sent != 1100 || d.Late != 1 || back.Runs[0].Spec.LossTimeout != rdma.Duration(time.Second) {
		t.Errorf("latency delivery after a round trip: %+v", d)
	}
	if d := back.Runs[1].Result.Bandwidth.Directions[0].Delivery; d == nil || d.Lost != 3 || d.ReceivedBytesPerSecond != 3.3e7 {
		t.Errorf("bandwidth delivery after a round trip: %+v", d)
	}
	if d := back.Runs[2].Result.Latency.Delivery; d == nil || !d.Silent {
		t.Errorf("silent run after a round trip: %+v", d)
	}
}
