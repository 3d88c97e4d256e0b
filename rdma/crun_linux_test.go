//go:build linux && cgo && !nordma

package rdma

import (
	"testing"
	"unsafe"
)

// TestLatencyBuffersStartClean: a histogram kept with the endpoint must
// be all zeros at the start of every run, whether the last run's Result
// zeroed what it counted or the run ended without one.
func TestLatencyBuffersStartClean(t *testing.T) {
	e := &Endpoint{wake: -1}
	defer e.freeLatencyBuffers()
	hist := func(b *latencyBuffers) []uint64 {
		return unsafe.Slice((*uint64)(unsafe.Pointer(b.hist)), histBuckets)
	}
	zero := func(what string, h []uint64) {
		t.Helper()
		for i, c := range h {
			if c != 0 {
				t.Fatalf("%s: bucket %d holds %d", what, i, c)
			}
		}
	}
	b, err := e.latencyBuffers(0)
	if err != nil {
		t.Fatal(err)
	}
	zero("a new buffer", hist(b))

	// A run counts; Result takes exactly those buckets and zeroes them.
	h := hist(b)
	h[3], h[2047], h[histBuckets-1] = 5, 1, 2
	got := e.takeHistogram(0)
	want := []bucketCount{{3, 5}, {2047, 1}, {histBuckets - 1, 2}}
	if len(got) != len(want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("took %v, want %v", got, want)
		}
	}
	b2, err := e.latencyBuffers(0)
	if err != nil {
		t.Fatal(err)
	}
	if b2.hist != b.hist {
		t.Error("the second run got a new histogram; the endpoint's should be kept")
	}
	zero("after Result took the buckets", hist(b2))

	// A run that ends without Result leaves counts; the next starts clean.
	hist(b2)[100] = 7
	b3, err := e.latencyBuffers(0)
	if err != nil {
		t.Fatal(err)
	}
	zero("after a run without Result", hist(b3))

	// A second worker gets buffers of its own.
	b4, err := e.latencyBuffers(1)
	if err != nil {
		t.Fatal(err)
	}
	if b4.hist == b3.hist || b4.samples == b3.samples {
		t.Error("two workers share a buffer")
	}
}
