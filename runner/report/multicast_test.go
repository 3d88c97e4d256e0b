package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/rdma"
)

// multicastFixture is a multicast run to three responders, the third of
// which lost everything. Invented numbers, for the layout.
func multicastFixture(t *testing.T) *Report {
	spec, err := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, QPType: rdma.UD, Size: 1024, Iterations: 2000,
		Multicast: "239.255.1.2", Receivers: []string{"10.0.0.3:18520", "10.0.0.4:18520"}}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	got := func(n uint64) rdma.Delivery {
		d := rdma.Delivery{Sent: 2000, Received: n, Lost: 2000 - n, LossRatio: float64(2000-n) / 2000}
		if n > 0 {
			d.ReceivedBytesPerSecond = 6e6
		}
		return d
	}
	worst := got(0)
	dir := rdma.Direction{From: "rxe0", To: "239.255.1.2", Messages: 2000, Bytes: 2000 * 1024, Seconds: 0.35, BytesPerSecond: 2000 * 1024 / 0.35, MessagesPerSec: 2000 / 0.35, Delivery: &worst}
	res := &rdma.Result{Spec: spec, Requester: rdma.EndpointInfo{Device: "rxe0"}, Responder: rdma.EndpointInfo{Device: "rxe1"},
		Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{dir}, PerQP: [][]rdma.Direction{{dir}}},
		Sides:     []rdma.SideSummary{{Device: "rxe0"}, {Device: "rxe1"}, {Device: "rxe2"}, {Device: "rxe3"}},
		Receivers: []rdma.MulticastReceiver{
			{Host: "10.0.0.2:18520", Device: "rxe1", Delivery: got(2000)},
			{Host: "10.0.0.3:18520", Device: "rxe2", Delivery: got(1990)},
			{Host: "10.0.0.4:18520", Device: "rxe3", Delivery: got(0)},
		}}
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	r := &Report{Schema: Schema, Tool: "rdmarun test", Scenario: "multicast", File: "multicast.yaml", Peer: "10.0.0.2:18520", Started: start, Finished: start.Add(2 * time.Second),
		Runs: []Run{{Case: "group", Status: Failed, Spec: spec, Result: res, Seconds: 1.2,
			Verdicts: []Verdict{{Expr: "loss_ratio < 0.01", Passed: false, Values: map[string]float64{"loss_ratio": 1}}}}}}
	r.Tally()
	return r
}

// TestMulticastReport: the text names every receiver with its count and
// the worst loss; the HTML has a table of the receivers; the JSON
// matches the schema.
func TestMulticastReport(t *testing.T) {
	r := multicastFixture(t)
	for name, write := range map[string]func(*bytes.Buffer, *Report) error{
		"multicast.txt":         func(b *bytes.Buffer, r *Report) error { return Text(b, r) },
		"multicast.compact.txt": func(b *bytes.Buffer, r *Report) error { return Compact(b, r) },
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := write(&b, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name, b.Bytes())
		})
	}
	var h bytes.Buffer
	if err := HTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<caption>Multicast to 239.255.1.2, 1KiB: what each receiver took of 2000 messages sent</caption>",
		`<td style="text-align:left">10.0.0.4:18520</td><td>rxe3</td><td>0</td><td>2000</td><td>100.00</td>`,
		`<td style="text-align:left">10.0.0.3:18520</td><td>rxe2</td><td>1990</td><td>10</td><td>0.50</td>`,
	} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("the HTML lacks %s", want)
		}
	}
	var js bytes.Buffer
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(t, compileSchema(t), js.Bytes()); err != nil {
		t.Fatalf("the multicast report does not match schema.json:\n%v", err)
	}
}
