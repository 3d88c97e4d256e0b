package exposition

import (
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The native histogram: bucket factor at most 1.05 (schema 4, a factor of
// 2^(1/16) = 1.044), at most 160 buckets, and a reset at most once an
// hour to get back to full resolution, as the HistogramOpts of
// client_golang that these replace said (NativeHistogramBucketFactor,
// NativeHistogramMaxBucketNumber, NativeHistogramMinResetDuration).
const (
	nativeSchema         = 4
	nativeMinSchema      = -4
	nativeMaxBuckets     = 160
	nativeMinResetPeriod = time.Hour
)

// nativeZeroThreshold is client_golang's default (2^-128): only a zero
// falls in the zero bucket.
var nativeZeroThreshold = math.Ldexp(1, -128)

// nativeBounds[s] are the upper bounds of the fraction (math.Frexp) of a
// value in the 2^s buckets of schema s > 0 between two powers of two.
var nativeBounds = func() [nativeSchema + 1][]float64 {
	var b [nativeSchema + 1][]float64
	for s := 1; s <= nativeSchema; s++ {
		n := 1 << s
		b[s] = make([]float64, n)
		for i := range n {
			b[s][i] = math.Exp2(float64(i)/float64(n)) / 2
		}
	}
	return b
}()

// nativeKey is the index of v's bucket in schema: bucket k holds
// (2^((k-1)/2^schema), 2^(k/2^schema)].
func nativeKey(v float64, schema int32) int {
	frac, exp := math.Frexp(v)
	if schema > 0 {
		bounds := nativeBounds[schema]
		return sort.SearchFloat64s(bounds, frac) + (exp-1)*len(bounds)
	}
	key := exp
	if frac == 0.5 {
		key--
	}
	offset := (1 << -schema) - 1
	return (key + offset) >> -schema
}

type nativeBucket struct {
	key   int
	count int64
}

// Histogram is one series of a histogram family: the classic buckets
// and a native histogram for a Prometheus that ingests one. It replaces
// a client_golang Histogram, whose Write allocated some seventy objects
// per series on every scrape; this one is written by Collect into blocks
// shared by all series, and by a scrape straight into its buffer.
type Histogram struct {
	bounds []float64 // the family's Buckets, shared and never written

	mu     sync.Mutex
	counts []uint64 // per classic bucket, not cumulative; the last is +Inf
	count  uint64
	sum    float64

	schema    int32
	zeroCount uint64
	buckets   []nativeBucket // by key
	// created is when the histogram started from zero, the created
	// timestamp of its protobuf; a reset moves it.
	created   time.Time
	createdTS *timestamppb.Timestamp
	// resetDue: the buckets were made coarser, and the histogram starts
	// over at full resolution once nativeMinResetPeriod has passed since
	// created.
	resetDue bool
}

func newHistogram(bounds []float64, now time.Time) *Histogram {
	h := &Histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
	h.reset(now)
	return h
}

func (h *Histogram) reset(now time.Time) {
	clear(h.counts)
	h.count, h.sum, h.zeroCount = 0, 0, 0
	h.schema, h.buckets, h.resetDue = nativeSchema, h.buckets[:0], false
	h.created, h.createdTS = now, timestamppb.New(now)
}

// Observe adds n samples of v.
func (h *Histogram) Observe(v float64, n uint64, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.resetDue && now.Sub(h.created) >= nativeMinResetPeriod {
		h.reset(now)
	}
	h.add(v, n)
	if len(h.buckets) <= nativeMaxBuckets {
		return
	}
	if !h.resetDue && now.Sub(h.created) >= nativeMinResetPeriod {
		// Start over, keeping the samples that overflowed.
		h.reset(now)
		h.add(v, n)
		return
	}
	h.resetDue = true
	if h.schema > nativeMinSchema {
		h.halveResolution()
	}
}

func (h *Histogram) add(v float64, n uint64) {
	// The histograms here hold durations, which are never negative;
	// should one come, it is counted as zero rather than as a bucket of
	// negative values.
	v = max(v, 0)
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i] += n
	h.count += n
	h.sum += v * float64(n)
	if v <= nativeZeroThreshold {
		h.zeroCount += n
		return
	}
	key := nativeKey(v, h.schema)
	j, found := slices.BinarySearchFunc(h.buckets, key, func(b nativeBucket, k int) int { return b.key - k })
	if !found {
		h.buckets = slices.Insert(h.buckets, j, nativeBucket{key: key})
	}
	h.buckets[j].count += int64(n)
}

// halveResolution merges each pair of buckets into one of the next
// schema down: bucket k becomes ceil(k/2).
func (h *Histogram) halveResolution() {
	h.schema--
	merged := h.buckets[:0]
	for _, b := range h.buckets {
		k := b.key
		if k > 0 {
			k++
		}
		k /= 2
		if n := len(merged); n > 0 && merged[n-1].key == k {
			merged[n-1].count += b.count
			continue
		}
		merged = append(merged, nativeBucket{key: k, count: b.count})
	}
	h.buckets = merged
}

// histogramBlocks are the protobuf objects of one Collect's histograms,
// allocated once for all of them and handed out in order.
type histogramBlocks struct {
	histograms []dto.Histogram
	values     []histogramValues
	buckets    []dto.Bucket
	bucketPtrs []*dto.Bucket
	cumulative []uint64
	spans      []dto.BucketSpan
	spanPtrs   []*dto.BucketSpan
	spanValues []spanValues
	deltas     []int64
}

type histogramValues struct {
	count, zeroCount uint64
	sum              float64
	schema           int32
}

type spanValues struct {
	offset int32
	length uint32
}

// histogramSize is how much of each block some histograms need.
type histogramSize struct {
	histograms, buckets, spans, deltas int
}

func (s *histogramSize) add(o histogramSize) {
	s.histograms += o.histograms
	s.buckets += o.buckets
	s.spans += o.spans
	s.deltas += o.deltas
}

func newHistogramBlocks(size histogramSize) *histogramBlocks {
	return &histogramBlocks{
		histograms: make([]dto.Histogram, size.histograms),
		values:     make([]histogramValues, size.histograms),
		buckets:    make([]dto.Bucket, size.buckets),
		bucketPtrs: make([]*dto.Bucket, size.buckets),
		cumulative: make([]uint64, size.buckets),
		spans:      make([]dto.BucketSpan, size.spans),
		spanPtrs:   make([]*dto.BucketSpan, size.spans),
		spanValues: make([]spanValues, size.spans),
		deltas:     make([]int64, size.deltas),
	}
}

// size is what write needs of the blocks for h as it is now. Samples
// that come in between need more: take then starts new blocks.
func (h *Histogram) size() histogramSize {
	h.mu.Lock()
	defer h.mu.Unlock()
	spans, deltas := h.spanCounts()
	return histogramSize{histograms: 1, buckets: len(h.bounds), spans: spans, deltas: deltas}
}

// spanCounts is how many spans and deltas encode the native buckets:
// a gap of one or two empty buckets is cheaper kept inside a span, as
// zero deltas, than as a new span.
func (h *Histogram) spanCounts() (spans, deltas int) {
	for i, b := range h.buckets {
		if gap := b.key - h.buckets[max(i-1, 0)].key - 1; i == 0 || gap > 2 {
			spans++
			deltas++
		} else {
			deltas += gap + 1
		}
	}
	return spans, deltas
}

// take returns the first n elements of *s and removes them from it. If
// *s is short, it starts a new block: the elements handed out before stay
// where they are.
func take[T any](s *[]T, n int) []T {
	if len(*s) < n {
		*s = make([]T, max(n, 256))
	}
	out := (*s)[:n:n]
	*s = (*s)[n:]
	return out
}

// write fills the next histogram of blocks with h's state and returns it.
func (h *Histogram) write(blocks *histogramBlocks) *dto.Histogram {
	out, vals := &blocks.histograms[0], &blocks.values[0]
	blocks.histograms, blocks.values = blocks.histograms[1:], blocks.values[1:]
	nb := len(h.bounds)
	bs, ptrs, cum := take(&blocks.buckets, nb), take(&blocks.bucketPtrs, nb), take(&blocks.cumulative, nb)

	h.mu.Lock()
	defer h.mu.Unlock()
	vals.count, vals.zeroCount, vals.sum, vals.schema = h.count, h.zeroCount, h.sum, h.schema
	var c uint64
	for i := range h.bounds {
		c += h.counts[i]
		cum[i] = c
		bs[i].CumulativeCount, bs[i].UpperBound = &cum[i], &h.bounds[i]
		ptrs[i] = &bs[i]
	}
	out.SampleCount, out.SampleSum, out.Bucket, out.CreatedTimestamp = &vals.count, &vals.sum, ptrs, h.createdTS
	out.Schema, out.ZeroThreshold, out.ZeroCount = &vals.schema, &nativeZeroThreshold, &vals.zeroCount
	// The zero threshold is never 0, which is what tells a scraper that
	// a histogram with no native buckets yet is native all the same.
	out.PositiveSpan, out.PositiveDelta = h.spans(blocks)
	return out
}

// spans encodes the native buckets as Prometheus does: in spans (see
// spanCounts), each count as the difference from the previous bucket's.
func (h *Histogram) spans(blocks *histogramBlocks) ([]*dto.BucketSpan, []int64) {
	if len(h.buckets) == 0 {
		return nil, nil
	}
	nSpans, nDeltas := h.spanCounts()
	spans, ptrs, vals := take(&blocks.spans, nSpans), take(&blocks.spanPtrs, nSpans), take(&blocks.spanValues, nSpans)
	deltas := take(&blocks.deltas, nDeltas)[:0]
	s, prev, next := -1, int64(0), 0
	for i, b := range h.buckets {
		if gap := b.key - next; i == 0 || gap > 2 {
			s++
			vals[s].offset = int32(gap)
			spans[s].Offset, spans[s].Length = &vals[s].offset, &vals[s].length
			ptrs[s] = &spans[s]
		} else {
			for range gap {
				deltas = append(deltas, -prev)
				prev = 0
				vals[s].length++
			}
		}
		deltas = append(deltas, b.count-prev)
		prev = b.count
		vals[s].length++
		next = b.key + 1
	}
	return ptrs, deltas
}
