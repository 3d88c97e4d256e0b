package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

// scalingFixture: two cases sweeping 1, 4 and 16 QPs of 64 B sends, one
// over a shared receive queue, and a case with only two QP counts.
// Invented numbers, for the layout.
func scalingFixture(t *testing.T) *Report {
	run := func(name string, qps int, srq bool, mmsgs float64, registered int64) Run {
		spec, err := rdma.TestSpec{Op: rdma.OpSend, Measure: rdma.MeasureBandwidth, Size: 64, QPs: qps, SRQ: srq}.Complete()
		if err != nil {
			t.Fatal(err)
		}
		d := rdma.Direction{From: "rxe1", To: "rxe0", Messages: 1000, Bytes: 64000, Seconds: 1000 / (mmsgs * 1e6), MessagesPerSec: mmsgs * 1e6}
		res := &rdma.Result{Spec: spec, Requester: rdma.EndpointInfo{Device: "rxe1"}, Responder: rdma.EndpointInfo{Device: "rxe0"},
			Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{d}},
			Sides:     []rdma.SideSummary{{Device: "rxe1", RegisteredBytes: registered / 2}, {Device: "rxe0", RegisteredBytes: registered / 2}}}
		return Run{Case: name, Status: Passed, Spec: spec, Result: res, Seconds: 1}
	}
	start := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	r := &Report{Schema: Schema, Tool: "rdmarun test", Scenario: "scaling", File: "scaling.yaml", Peer: "loopback", Started: start, Finished: start.Add(time.Minute),
		Runs: []Run{
			run("send-64B", 1, false, 0.1, 2<<20), run("send-64B", 4, false, 0.3, 8<<20), run("send-64B", 16, false, 0.35, 32<<20),
			run("send-64B-srq", 1, true, 0.1, 2<<20), run("send-64B-srq", 4, true, 0.28, 3<<20), run("send-64B-srq", 16, true, 0.33, 5<<20),
			run("two-counts", 1, false, 0.1, 1<<20), run("two-counts", 2, false, 0.2, 1<<20),
		}}
	r.Tally()
	return r
}

func TestScalingHTML(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, scalingFixture(t)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i, j := strings.Index(page, `<section class="scaling">`), strings.Index(page, `</section>`)
	if i < 0 || j < i {
		t.Fatal("the page has no QP scaling section")
	}
	sec := page[i:j]
	for _, want := range []string{
		`aria-label="Message rate (Mmsg/s) vs QPs"`, `aria-label="Registered memory, both sides (MiB) vs QPs"`,
		// Both cases are lines of the same chart, and the QP axis is
		// labelled in QPs at each power of two.
		`>send-64B 64B busy_poll</text>`, `>send-64B-srq 64B busy_poll</text>`, `>16</text>`, `>4</text>`,
		`<td style="text-align:left">send-64B-srq 64B busy_poll</td><td>16</td><td>0.3300</td><td>5.00</td>`,
		`<td style="text-align:left">send-64B 64B busy_poll</td><td>16</td><td>0.3500</td><td>32.00</td>`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the scaling section lacks %s", want)
		}
	}
	if strings.Contains(sec, "two-counts") {
		t.Error("a case with two QP counts is drawn against QPs")
	}
	if n := strings.Count(sec, `<svg class="chart"`); n != 2 {
		t.Errorf("%d charts in the scaling section, want 2", n)
	}
}

// TestScalingHTMLAbsent: a page without a QP sweep (the common fixture)
// has no scaling section.
func TestScalingHTMLAbsent(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `class="scaling"`) {
		t.Error("a report without a QP sweep has a scaling section")
	}
}
