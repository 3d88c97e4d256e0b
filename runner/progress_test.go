package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// progressLines records Progress's calls as "before 2/3" and "after 3/3".
func progressLines(lines *[]string) func(done, total int, run *report.Run) {
	return func(done, total int, run *report.Run) {
		when := "after"
		if run.Status == "" {
			when = "before"
		}
		*lines = append(*lines, fmt.Sprintf("%s %d/%d", when, done, total))
	}
}

// TestResumeProgress: a resumed run's progress counts the runs it kept
// as done, so its lines go on from where the interrupted run stopped
// rather than from 1. A single pair counts by position, every run before
// one being kept or run again: its run after two kept is 3/3, and a run
// again between kept ones 2/3. A fleet's kept pairs are counted before
// any runs, so its first test after 4 kept runs of 12 is 5/12.
func TestResumeProgress(t *testing.T) {
	t.Run("single pair", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			results []func(rdma.Test) (*rdma.Result, error) // the first run's answers
			want    []string
		}{
			// Interrupted at its third run: runs 1 and 2 are kept.
			{name: "interrupted", results: []func(rdma.Test) (*rdma.Result, error){bySize, bySize, failWith(context.Canceled)},
				want: []string{"before 2/3", "after 3/3"}},
			// Run 2 errored: run 1 and 3 are kept, run 2 runs again.
			{name: "an errored run between kept ones", results: []func(rdma.Test) (*rdma.Result, error){bySize, failWith(errors.New("rdma: the test failed midway")), bySize},
				want: []string{"before 1/3", "after 2/3"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var b bytes.Buffer
				if _, err := Execute(context.Background(), load(t, false), &fakeTarget{results: tc.results}, streaming(t, &b)); err != nil {
					t.Fatal(err)
				}
				var lines []string
				opt := Options{Resume: readBack(t, &b), Progress: progressLines(&lines)}
				if _, err := Execute(context.Background(), load(t, false), &fakeTarget{results: []func(rdma.Test) (*rdma.Result, error){bySize}}, opt); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(lines, tc.want) {
					t.Errorf("progress %q, want %q", lines, tc.want)
				}
			})
		}
	})

	t.Run("fleet", func(t *testing.T) {
		// One pair at a time, so the order of the lines is known: 6
		// pairs of 2 runs, cut at the third pair's first.
		edit := func(fl *Fleet) { fl.Parallel = 1 }
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sc := fleetScenario(t, 4, edit)
		calls := 0
		cut := &fakeRelay{hosts: sc.Fleet.Hosts, answer: func(ctx context.Context, _ relayCall, spec rdma.Test) (*rdma.Result, error) {
			if calls++; calls == 5 {
				cancel()
				return nil, ctx.Err()
			}
			return measuredAs(spec, 10, 8), nil
		}}
		var b bytes.Buffer
		if _, err := ExecuteFleet(ctx, sc, Relay{Via: cut, Doctor: cut.Doctor}, streaming(t, &b)); err != nil {
			t.Fatal(err)
		}
		sc = fleetScenario(t, 4, edit)
		again := &fakeRelay{hosts: sc.Fleet.Hosts}
		var lines []string
		opt := Options{Resume: readBack(t, &b), Progress: progressLines(&lines)}
		if _, err := ExecuteFleet(context.Background(), sc, Relay{Via: again, Doctor: again.Doctor}, opt); err != nil {
			t.Fatal(err)
		}
		var want []string
		for done := 5; done <= 12; done++ {
			want = append(want, fmt.Sprintf("after %d/12", done))
		}
		if !slices.Equal(lines, want) {
			t.Errorf("progress %q, want %q", lines, want)
		}
	})
}
