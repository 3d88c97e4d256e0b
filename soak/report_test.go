package soak

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestWriteReport: the table the lead pastes into the closing note.
func TestWriteReport(t *testing.T) {
	tally := NewTally()
	for _, o := range []Outcome{
		{Index: 0, Kind: "good", Test: "send/latency/event/rc", Size: 2, QPs: 1, Runs: 1, OK: true, Seconds: 0.5},
		{Index: 1, Kind: "good", Test: "write/bandwidth/busy_poll/rc", Size: 1 << 20, QPs: 2, Runs: 3, Kept: true, Busy: 2, OK: true, Seconds: 1.5},
		{Index: 2, Kind: "good", Test: "send/latency/event/rc", Size: 4096, QPs: 8, Runs: 1, OK: false, Err: "stalled", Seconds: 5},
		{Index: 19, Kind: "killed_mid_test", OK: true, Seconds: 1},
		{Index: 39, Kind: "close_mid_handshake", OK: false, Err: "no hello", Seconds: 0.1},
	} {
		tally.Add(o)
	}
	samples := []Sample{
		{Label: "idle", At: 2 * time.Second, FDs: 7, Goroutines: 12, Threads: 8, RSSBytes: 20 << 20, RDMA: map[string]int{"pd": 2, "qp": 2}},
		{Label: "after 50", At: 75 * time.Second, FDs: 20, Goroutines: 17, Threads: 14, RSSBytes: 26 << 20, RDMA: map[string]int{"pd": 6, "qp": 11, "mr": 4}},
		{Label: "end", At: 140 * time.Second, FDs: 7, Goroutines: 12, Threads: 12, RSSBytes: 28 << 20, RDMA: map[string]int{"pd": 2, "qp": 2, "mr": 0}},
	}
	var b strings.Builder
	if err := WriteReport(&b, 42, 4, 131*time.Second, tally, samples); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("report differs from %s (go test -update to accept):\n%s", golden, b.String())
	}
	if tally.Tests != 5 || tally.Failed != 2 || tally.Busy != 2 || tally.KeptSessions != 1 || tally.Runs != 5 ||
		tally.MinSize != 2 || tally.MaxSize != 1<<20 || tally.MinQPs != 1 || tally.MaxQPs != 8 {
		t.Errorf("tally %+v", tally)
	}
}
