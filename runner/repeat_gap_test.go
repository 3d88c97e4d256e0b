package runner

import (
	"context"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// timedTarget notes when each run started.
type timedTarget struct {
	fakeTarget
	starts []time.Time
}

func (f *timedTarget) Run(ctx context.Context, spec rdma.Test) (*rdma.Result, error) {
	f.starts = append(f.starts, time.Now())
	if err := ctx.Err(); err != nil {
		return nil, err // as a real target's run ends
	}
	return f.fakeTarget.Run(ctx, spec)
}

const gapped = `
repeat: 3
repeat_gap: 150ms
cases:
  - {name: lat, op: write, measure: latency, sizes: [2, 64]}
`

// TestRepeatGap: passes are repeat_gap apart, runs inside a pass are not,
// and an interrupted gap ends at once.
func TestRepeatGap(t *testing.T) {
	sc, err := Parse("gap.yaml", []byte(gapped), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.RepeatGap != 150*time.Millisecond {
		t.Fatalf("RepeatGap %v, want 150ms", sc.RepeatGap)
	}
	target := &timedTarget{fakeTarget: fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){latencyResult(5)}}}
	rep, err := Execute(context.Background(), sc, target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 6 || len(target.starts) != 6 {
		t.Fatalf("%d runs reported, %d run; want 6", len(rep.Runs), len(target.starts))
	}
	for i := 1; i < 6; i++ {
		d := target.starts[i].Sub(target.starts[i-1])
		newPass := i%2 == 0
		if newPass && d < sc.RepeatGap {
			t.Errorf("run %d began %v after run %d, the first of a new pass: want at least %v", i, d, i-1, sc.RepeatGap)
		}
		if !newPass && d >= sc.RepeatGap {
			t.Errorf("run %d began %v after run %d in the same pass: want no gap", i, d, i-1)
		}
	}

	sc.RepeatGap = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	target.starts = nil
	rep, err = Execute(ctx, sc, target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("an interrupted gap of 1h took %v", took)
	}
	if len(target.starts) != 3 || rep.StopReason != report.StopInterrupted {
		t.Errorf("%d runs started, stop reason %q: want the first pass, then the next run interrupted", len(target.starts), rep.StopReason)
	}
}
