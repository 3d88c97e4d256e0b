//go:build linux && cgo && !nordma

package rdma

import (
	"math"
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

	// A run counts; Result takes exactly those buckets and zeroes them,
	// reading from the least value's bucket to the greatest's.
	h := hist(b)
	h[3], h[2047], h[histBuckets-1] = 5, 1, 2
	got := e.takeHistogram(0, 3, math.MaxUint64)
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

	// A run that counted nothing (its least value above its greatest)
	// has nothing to take.
	if got := e.takeHistogram(0, math.MaxUint64, 0); got != nil {
		t.Errorf("a run without samples took %v", got)
	}

	// A second worker gets buffers of its own.
	b4, err := e.latencyBuffers(1)
	if err != nil {
		t.Fatal(err)
	}
	if b4.hist == b3.hist || b4.samples == b3.samples {
		t.Error("two workers share a buffer")
	}
}

// TestBucketIndexMatchesC: Go reads the histogram by the bucket map the C
// loop counts with, at every boundary of the layout and between them.
func TestBucketIndexMatchesC(t *testing.T) {
	vs := []uint64{0, 1, 2047, 2048, 2049, math.MaxUint64, 1<<41 - 1, 1 << 41, 1 << 42}
	for shift := 11; shift < 64; shift++ {
		vs = append(vs, 1<<shift-1, 1<<shift, 1<<shift+1, 3<<(shift-1))
	}
	for v := uint64(1); v < 1<<40; v = v*3 + 7 {
		vs = append(vs, v)
	}
	for _, v := range vs {
		if got, want := bucketIndex(v), cBucketIndex(v); got != want {
			t.Errorf("bucketIndex(%d) = %d, the C loop counts it in %d", v, got, want)
		}
	}
}
