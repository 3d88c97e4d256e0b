package rdma

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestPercentileMatchesHDR: percentileOf gives, for every percentile,
// exactly what hdrhistogram's ValueAtPercentile gives for a histogram of
// the same buckets: one sample, a few, dense, sparse over the whole
// range, and the last C bucket, which stands past HDR's 60 s.
func TestPercentileMatchesHDR(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sets := map[string][]bucketCount{
		"one sample":        {{idx: 1500, n: 1}},
		"one bucket, many":  {{idx: 5000, n: 1000}},
		"below 2048 only":   {{idx: 3, n: 2}, {idx: 900, n: 5}, {idx: 2047, n: 1}},
		"the last C bucket": {{idx: 2500, n: 10}, {idx: histBuckets - 2, n: 3}, {idx: histBuckets - 1, n: 2}},
	}
	for i := range 200 {
		dense := make([]uint64, histBuckets)
		for range 1 + rng.IntN(400) {
			var idx int
			switch i % 3 {
			case 0: // clustered, as a run's round trips are
				idx = 2*histSub + 12*histSub + rng.IntN(3*histSub)
			case 1: // anywhere
				idx = rng.IntN(histBuckets)
			default: // low values, unit buckets
				idx = rng.IntN(4 * histSub)
			}
			dense[idx] += 1 + uint64(rng.IntN(50))
		}
		sets["random "+string(rune('a'+i%26))+string(rune('a'+i/26))] = nonEmpty(dense)
	}
	percentiles := []float64{0.0001, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 99.999, 100, 150}
	for name, buckets := range sets {
		// An HDR histogram of the same samples is the reference.
		h := hdrhistogram.New(1, histMax, 3)
		for _, b := range bucketsOf(buckets) {
			if err := h.RecordValues(b.Ns, int64(b.Count)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for _, p := range percentiles {
			if got, want := percentileOf(buckets, p), h.ValueAtPercentile(p); got != want {
				t.Errorf("%s: p%v = %d, HDR says %d", name, p, got, want)
			}
		}
	}
	if got := percentileOf(nil, 50); got != 0 {
		t.Errorf("no samples: p50 = %d, want 0", got)
	}
}

// nonEmpty lists the non-empty buckets of a whole histogram, in order.
func nonEmpty(dense []uint64) []bucketCount { return nonEmptyFrom(dense, 0) }

// cRecord mirrors the C loop's hist_record in Go, so the bucket layout
// and its conversion can be checked against an exact computation.
func cRecord(buckets []uint64, m *moments, v uint64) {
	m.n++
	m.sum += v
	m.sumsq += float64(v) * float64(v)
	m.min = min(m.min, v)
	m.max = max(m.max, v)
	buckets[bucketIndex(v)]++
}

func TestBucketValueRoundTrip(t *testing.T) {
	// Every value maps to a bucket whose representative is within 0.05%.
	for _, v := range []uint64{0, 1, 2047, 2048, 2049, 4095, 4096, 12345, 999_999, 1 << 30, 59_999_999_999} {
		b := make([]uint64, histBuckets)
		m := moments{min: math.MaxUint64}
		cRecord(b, &m, v)
		for i, c := range b {
			if c == 0 {
				continue
			}
			got := float64(bucketValue(i))
			if math.Abs(got-float64(v)) > float64(v)*0.0005+0.5 {
				t.Errorf("value %d: bucket %d stands for %v", v, i, got)
			}
		}
	}
}

// TestSummaryAgainstExact feeds known samples through the C layout and the
// HDR histogram and compares with the exact nearest-rank computation.
func TestSummaryAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		samples func() []uint64
	}{
		{"uniform 1..10000", func() []uint64 {
			s := make([]uint64, 10000)
			for i := range s {
				s[i] = uint64(i + 1)
			}
			return s
		}},
		{"lognormal-ish rxe latencies", func() []uint64 {
			s := make([]uint64, 200000)
			for i := range s {
				s[i] = uint64(20000 * math.Exp(rng.NormFloat64()*0.5))
			}
			return s
		}},
		{"bimodal with a tail", func() []uint64 {
			s := make([]uint64, 50000)
			for i := range s {
				s[i] = 1500 + uint64(rng.IntN(100))
				if i%100 == 0 {
					s[i] = 250_000 + uint64(rng.IntN(10_000_000))
				}
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples := tc.samples()
			b := make([]uint64, histBuckets)
			m := moments{min: math.MaxUint64}
			for _, v := range samples {
				cRecord(b, &m, v)
			}
			got, want := summaryOf(m, nonEmpty(b)), exactSummary(samples)
			if got.Count != want.Count || got.Min != want.Min || got.Max != want.Max {
				t.Errorf("count/min/max %d %v %v, want %d %v %v", got.Count, got.Min, got.Max, want.Count, want.Min, want.Max)
			}
			if math.Abs(got.Mean-want.Mean) > 1e-9*want.Mean {
				t.Errorf("mean %v, want %v", got.Mean, want.Mean)
			}
			if math.Abs(got.Stddev-want.Stddev) > 1e-6*want.Stddev {
				t.Errorf("stddev %v, want %v", got.Stddev, want.Stddev)
			}
			for _, p := range []struct {
				name      string
				got, want float64
			}{{"p50", got.P50, want.P50}, {"p90", got.P90, want.P90}, {"p99", got.P99, want.P99}, {"p99.9", got.P999, want.P999}, {"p99.99", got.P9999, want.P9999}} {
				// Two quantisations (the C buckets, then HDR's) of 0.1% each.
				if math.Abs(p.got-p.want) > 0.002*p.want+1 {
					t.Errorf("%s = %v, exact %v", p.name, p.got, p.want)
				}
			}
		})
	}
}

func TestDirectionUnits(t *testing.T) {
	d := newDirection("a", "b", 1000, 1<<20, 0, 1e9) // 1000 MiB in one second
	if d.Bytes != 1000<<20 || d.Seconds != 1 || d.MessagesPerSec != 1000 {
		t.Fatalf("%+v", d)
	}
	if math.Abs(d.Gbps()-8.388608) > 1e-9 || math.Abs(d.GiBps()-1000.0/1024) > 1e-12 {
		t.Errorf("Gb/s %v GiB/s %v", d.Gbps(), d.GiBps())
	}
	if z := newDirection("a", "b", 0, 8, 5, 5); z.BytesPerSecond != 0 {
		t.Errorf("zero-length span gave %v", z.BytesPerSecond)
	}
}

// TestMergeBucketsMatchesDenseSum: workers' histograms merged bucket list
// by bucket list must equal their dense sum, overlapping or not.
func TestMergeBucketsMatchesDenseSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, workers := range []int{1, 2, 3, 8} {
		dense := make([]uint64, histBuckets)
		var merged []bucketCount
		for range workers {
			b := make([]uint64, histBuckets)
			m := moments{min: math.MaxUint64}
			for range 500 {
				// Narrow and wide ranges, so buckets both collide and not.
				cRecord(b, &m, uint64(1000+rng.IntN(3000)))
				cRecord(b, &m, uint64(rng.Int64N(1<<34)))
			}
			for i, c := range b {
				dense[i] += c
			}
			merged = mergeBuckets(merged, nonEmpty(b))
		}
		want := nonEmpty(dense)
		if len(merged) != len(want) {
			t.Fatalf("%d workers: %d merged buckets, want %d", workers, len(merged), len(want))
		}
		for i := range want {
			if merged[i] != want[i] {
				t.Fatalf("%d workers: bucket %d is %+v, want %+v", workers, i, merged[i], want[i])
			}
		}
	}
}

// BenchmarkAssembleLatency assembles the result of a prober's run, ten
// round trips: what each probe costs on the client once the loop is
// done (an op is a run).
func BenchmarkAssembleLatency(b *testing.B) {
	dense := make([]uint64, histBuckets)
	m := moments{min: math.MaxUint64}
	for i := range 10 {
		cRecord(dense, &m, uint64(180_000+i*7_000))
	}
	spec := Test{TestSpec: TestSpec{Measure: MeasureLatency, Op: OpWriteImm}}
	req := &SideResult{lat: m, hist: nonEmpty(dense)}
	resp := &SideResult{}
	b.ReportAllocs()
	for range b.N {
		if res := Assemble(spec, EndpointInfo{}, EndpointInfo{}, req, resp); res.Latency.RTT.Count != 10 {
			b.Fatal(res.Latency.RTT)
		}
	}
}

// TestDelivery: what a UD run's sides counted becomes sent, received,
// lost and late, in latency and in bandwidth.
func TestDelivery(t *testing.T) {
	req := &SideResult{QPs: []QPCounts{{Posted: 110, TimedOut: 3, Late: 1, Received: 108}, {Posted: 110}}, Silent: true}
	got := roundTripDelivery(req)
	want := &Delivery{Sent: 220, Received: 217, Lost: 2, LossRatio: 2.0 / 220, Late: 1, Silent: true}
	if *got != *want {
		t.Errorf("round trips: %+v, want %+v", *got, *want)
	}
	// More late answers than time-outs cannot make a negative loss.
	if d := roundTripDelivery(&SideResult{QPs: []QPCounts{{Posted: 10, TimedOut: 1, Late: 2}}}); d.Lost != 0 || d.Received != 9 {
		t.Errorf("late beyond timed out: %+v", *d)
	}
	rx := &SideResult{QPs: []QPCounts{
		{Received: 500, FirstRecv: 1e9, LastRecv: 1e9 + 5e8},
		{Received: 490, FirstRecv: 1e9 + 1e6, LastRecv: 1e9 + 4e8},
	}}
	got = messageDelivery(1000, rx, 1024)
	want = &Delivery{Sent: 1000, Received: 990, Lost: 10, LossRatio: 0.01, ReceivedBytesPerSecond: 989 * 1024 / 0.5}
	if *got != *want {
		t.Errorf("messages: %+v, want %+v", *got, *want)
	}
	if d := messageDelivery(1000, &SideResult{QPs: []QPCounts{{}}}, 1024); d.Lost != 1000 || d.LossRatio != 1 || d.ReceivedBytesPerSecond != 0 {
		t.Errorf("nothing received: %+v", *d)
	}
}
