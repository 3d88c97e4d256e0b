package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
)

// TestSRQText: a run over shared receive queues says what each side
// registered, and a starved queue says so with its limit event and RNR
// NAKs; the JSON matches the schema.
func TestSRQText(t *testing.T) {
	spec := func(depth int) rdma.Test {
		c, err := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 4096, QPs: 64, SRQ: true, SRQDepth: depth}.Complete()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	res := func(s rdma.Test, limit int, rnr uint64) *rdma.Result {
		d := rdma.Direction{From: "rxe1", To: "rxe0", Messages: 6400, Bytes: 6400 * 4096, Seconds: 1, BytesPerSecond: 6400 * 4096, MessagesPerSec: 6400}
		return &rdma.Result{Spec: s, Requester: rdma.EndpointInfo{Device: "rxe1"}, Responder: rdma.EndpointInfo{Device: "rxe0"},
			Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{d}, PerQP: [][]rdma.Direction{{d}}},
			Sides: []rdma.SideSummary{
				{Device: "rxe1", RegisteredBytes: 65 * 4096, Counters: portstats.Deltas{HWCounters: map[string]uint64{"rcvd_rnr_err": rnr}}},
				{Device: "rxe0", RegisteredBytes: 65 * 4096, SRQLimitReached: limit, Counters: portstats.Deltas{HWCounters: map[string]uint64{"send_rnr_err": rnr}}},
			}}
	}
	start := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	r := &Report{Schema: Schema, Tool: "rdmarun test", Scenario: "srq", File: "srq.yaml", Peer: "loopback", Started: start, Finished: start.Add(3 * time.Second),
		Runs: []Run{
			{Case: "srq", Index: 0, Status: Passed, Spec: spec(512), Result: res(spec(512), 0, 0), Seconds: 1},
			{Case: "srq", Index: 1, Status: Passed, Spec: spec(2), Result: res(spec(2), 1, 3080), Seconds: 2},
		}}
	r.Tally()
	for name, write := range map[string]func(*bytes.Buffer, *Report) error{
		"srq.txt":         func(b *bytes.Buffer, r *Report) error { return Text(b, r) },
		"srq.compact.txt": func(b *bytes.Buffer, r *Report) error { return Compact(b, r) },
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := write(&b, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name, b.Bytes())
		})
	}
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(t, compileSchema(t), b.Bytes()); err != nil {
		t.Fatalf("the SRQ report does not match schema.json:\n%v", err)
	}
}
