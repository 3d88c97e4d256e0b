package soak

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Outcome is one test's result as a client process reports it, one JSON
// line on its stdout.
type Outcome struct {
	Index int    `json:"i"`
	Kind  string `json:"kind"` // "good" or the misbehaviour
	// Test is op/measure/mode/transport of a good test, for the table.
	Test string `json:"test,omitempty"`
	Size int    `json:"size_bytes,omitempty"`
	QPs  int    `json:"qps,omitempty"`
	Runs int    `json:"runs,omitempty"`
	// Kept: the responder granted a session kept between runs.
	Kept bool `json:"kept,omitempty"`
	// Busy counts the busy answers retried before the test got a slot.
	Busy    int     `json:"busy,omitempty"`
	OK      bool    `json:"ok"`
	Err     string  `json:"err,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Tally adds up outcomes for the report.
type Tally struct {
	Tests, Failed, Busy, KeptSessions, Runs int
	// ByTest counts good tests (and their failures) by op/measure/mode/transport.
	ByTest, FailedByTest map[string]int
	// ByMisbehaviour counts misbehaving clients, and those whose
	// misbehaviour the responder did not answer as it must.
	ByMisbehaviour, FailedByMisbehaviour map[string]int
	// Sizes and QPs seen, to show the mix covered its range.
	MinSize, MaxSize, MinQPs, MaxQPs int
	// GoodSeconds is the good tests' time, busy retries included.
	GoodSeconds float64
}

// NewTally is an empty tally.
func NewTally() *Tally {
	return &Tally{ByTest: map[string]int{}, FailedByTest: map[string]int{}, ByMisbehaviour: map[string]int{}, FailedByMisbehaviour: map[string]int{}}
}

// Add counts o.
func (t *Tally) Add(o Outcome) {
	t.Tests++
	t.Busy += o.Busy
	if !o.OK {
		t.Failed++
	}
	if o.Kind != Good.String() {
		t.ByMisbehaviour[o.Kind]++
		if !o.OK {
			t.FailedByMisbehaviour[o.Kind]++
		}
		return
	}
	t.ByTest[o.Test]++
	if !o.OK {
		t.FailedByTest[o.Test]++
	}
	t.Runs += o.Runs
	t.GoodSeconds += o.Seconds
	if o.Kept {
		t.KeptSessions++
	}
	if t.MinSize == 0 || o.Size < t.MinSize {
		t.MinSize = o.Size
	}
	t.MaxSize = max(t.MaxSize, o.Size)
	if t.MinQPs == 0 || o.QPs < t.MinQPs {
		t.MinQPs = o.QPs
	}
	t.MaxQPs = max(t.MaxQPs, o.QPs)
}

// WriteReport writes the soak's table: what ran, what misbehaved, how
// long it took, and the responder's resources from the idle baseline to
// the end.
func WriteReport(w io.Writer, seed uint64, clients int, wall time.Duration, t *Tally, samples []Sample) error {
	var b strings.Builder
	good := t.Tests
	for _, n := range t.ByMisbehaviour {
		good -= n
	}
	fmt.Fprintf(&b, "soak: seed %d, %d tests from %d client processes in %v (%d good, %d misbehaving; %d failed)\n",
		seed, t.Tests, clients, wall.Round(time.Second), good, t.Tests-good, t.Failed)
	mean := 0.0
	if good > 0 {
		mean = t.GoodSeconds / float64(good)
	}
	fmt.Fprintf(&b, "good tests: %d runs, %d on kept sessions; sizes %d..%d B, QPs %d..%d; %.2f s each on average; %d busy answers retried\n\n",
		t.Runs, t.KeptSessions, t.MinSize, t.MaxSize, t.MinQPs, t.MaxQPs, mean, t.Busy)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test (op/measure/mode/transport)\ttests\tfailed\t")
	for _, k := range slices.Sorted(maps.Keys(t.ByTest)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", k, t.ByTest[k], t.FailedByTest[k])
	}
	fmt.Fprintln(tw, "\t\t\t")
	fmt.Fprintln(tw, "misbehaving client\tclients\tnot answered as it must\t")
	for m := KilledMidTest; m < misbehaviourEnd; m++ {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", m, t.ByMisbehaviour[m.String()], t.FailedByMisbehaviour[m.String()])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	writeSamples(&b, samples)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSamples(b *strings.Builder, samples []Sample) {
	kinds := map[string]bool{}
	for _, s := range samples {
		for k := range s.RDMA {
			kinds[k] = true
		}
	}
	rdmaKinds := slices.Sorted(maps.Keys(kinds))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "responder sample\tat\tfds\tgoroutines\tthreads\tRSS MiB\t")
	for _, k := range rdmaKinds {
		fmt.Fprintf(tw, "%s\t", k)
	}
	fmt.Fprintln(tw)
	for _, s := range samples {
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%d\t%.1f\t", s.Label, s.At.Round(time.Second), s.FDs, s.Goroutines, s.Threads, float64(s.RSSBytes)/(1<<20))
		for _, k := range rdmaKinds {
			fmt.Fprintf(tw, "%d\t", s.RDMA[k])
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	b.WriteString("(RDMA objects: the kernel's, over every device, the clients' included)\n")
}
