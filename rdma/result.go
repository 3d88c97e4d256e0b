package rdma

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Result is one test run, with the settings it really ran with.
type Result struct {
	Spec      Test            `json:"spec"`
	Requester EndpointInfo    `json:"requester"`
	Responder EndpointInfo    `json:"responder"`
	Latency   *LatencyStats   `json:"latency,omitempty"`
	Bandwidth *BandwidthStats `json:"bandwidth,omitempty"`
	// Elapsed is the wall time of the measured part.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Events counts completion-channel events consumed (event mode).
	Events uint64 `json:"events,omitempty"`
	// Connect is the QPs' set-up through the CM (connect: rdma_cm), as
	// the requester timed it; nil for a run connected by exchange, and
	// for a kept session's later runs.
	Connect *ConnectStats `json:"connect,omitempty"`
	// Sides holds CPU time and port counter deltas: requester, responder
	// (a multicast run: the sender, then each receiver).
	Sides []SideSummary `json:"sides"`
	// Receivers is a multicast run's receivers, what each one took from
	// the group; the bandwidth's Delivery is the worst of them (the most
	// lost), so a threshold on loss holds for every receiver.
	Receivers []MulticastReceiver `json:"receivers,omitempty"`
}

// LatencyStats are the round-trip times of a latency run. RTT is measured
// for every op; OneWay is RTT/2 for the ping-pong ops (send and write
// families), whose message crosses once each way.
type LatencyStats struct {
	RTT    Summary  `json:"rtt"`
	OneWay *Summary `json:"one_way,omitempty"`
	// Buckets lists every measured sample compactly, only the non-empty
	// 0.1%-wide buckets in rising order: what an exporter feeds its
	// histograms with, what a relayed result carries back, and what
	// rdmarun compare resamples (a report keeps them for that).
	Buckets []Bucket `json:"buckets,omitempty"`
	// Delivery is a UD run's round trips: begun, answered, lost.
	Delivery *Delivery `json:"delivery,omitempty"`
}

// Bucket is a latency value (the middle of a 0.1%-wide bucket, ns) and
// how many samples fell there.
type Bucket struct {
	Ns    int64
	Count uint64
}

// MarshalJSON writes [ns, count]: a run has up to a few hundred buckets,
// and a report holds every run's.
func (b Bucket) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "[%d,%d]", b.Ns, b.Count), nil
}

// UnmarshalJSON reads [ns, count], refusing what no run could record: a
// value outside the histogram's range, or a bucket counted zero times.
func (b *Bucket) UnmarshalJSON(p []byte) error {
	var pair []int64
	if err := json.Unmarshal(p, &pair); err != nil || len(pair) != 2 {
		return fmt.Errorf("latency bucket %s: want [ns, count]", p)
	}
	if pair[0] < 0 || pair[0] > histMax || pair[1] <= 0 {
		return fmt.Errorf("latency bucket [%d, %d]: want 0 <= ns <= %d and count > 0", pair[0], pair[1], int64(histMax))
	}
	b.Ns, b.Count = pair[0], uint64(pair[1])
	return nil
}

// Direction is the traffic one way across the pair.
type Direction struct {
	From           string  `json:"from"`
	To             string  `json:"to"`
	Messages       uint64  `json:"messages"`
	Bytes          uint64  `json:"bytes"`
	Seconds        float64 `json:"seconds"` // first post to last completion
	BytesPerSecond float64 `json:"bytes_per_second"`
	MessagesPerSec float64 `json:"messages_per_second"`
	// Delivery (UD): what of Messages, the messages sent, arrived.
	Delivery *Delivery `json:"delivery,omitempty"`
}

// Gbps is the rate in 10^9 bit/s.
func (d Direction) Gbps() float64 { return d.BytesPerSecond * 8 / 1e9 }

// GiBps is the rate in 2^30 bytes/s.
func (d Direction) GiBps() float64 { return d.BytesPerSecond / (1 << 30) }

// BandwidthStats are the directions of a bandwidth run, in total and per QP.
type BandwidthStats struct {
	Directions []Direction   `json:"directions"`
	PerQP      [][]Direction `json:"per_qp"` // [qp][direction]
}

func newDirection(from, to string, msgs uint64, size int, first, last int64) Direction {
	d := Direction{From: from, To: to, Messages: msgs, Bytes: msgs * uint64(size)}
	if last > first {
		d.Seconds = float64(last-first) / 1e9
		d.BytesPerSecond = float64(d.Bytes) / d.Seconds
		d.MessagesPerSec = float64(msgs) / d.Seconds
	}
	return d
}

// histMax is the largest latency a bucket stands for, in ns (60 s): the
// top of the HDR histogram (1 ns to 60 s, 3 significant digits) whose
// percentiles percentileOf gives.
const histMax = 60_000_000_000

// moments are the exact running sums of a sample set.
type moments struct {
	n, sum, min, max uint64
	sumsq            float64
}

// summaryOf combines the exact moments with the percentiles of buckets,
// the run's histogram. Percentiles are within the histogram's 0.1% and
// clamped to the exact minimum and maximum.
func summaryOf(m moments, buckets []bucketCount) Summary {
	if m.n == 0 {
		return Summary{}
	}
	mean := float64(m.sum) / float64(m.n)
	variance := m.sumsq/float64(m.n) - mean*mean
	q := func(p float64) float64 {
		v := float64(percentileOf(buckets, p))
		return math.Min(math.Max(v, float64(m.min)), float64(m.max))
	}
	return Summary{
		Count:  int(m.n),
		Min:    float64(m.min),
		Max:    float64(m.max),
		Mean:   mean,
		Stddev: math.Sqrt(math.Max(variance, 0)),
		P50:    q(50),
		P90:    q(90),
		P99:    q(99),
		P999:   q(99.9),
		P9999:  q(99.99),
	}
}

// The C loop's histogram layout (shim.h; enums_linux.go does not build
// unless these equal it): values below 2*histSub have a bucket each;
// above, histSub buckets per power of two.
const (
	histSub      = 1024
	histMaxShift = 30
	histBuckets  = 2*histSub + histMaxShift*histSub
)

// bucketValue is the value a C histogram bucket stands for: the middle of
// its range, so the error is at most half a bucket (0.05%).
func bucketValue(idx int) int64 {
	if idx < 2*histSub {
		return int64(idx)
	}
	k := idx - 2*histSub
	shift := k/histSub + 1
	sub := int64(k%histSub + histSub)
	lo := sub << shift
	hi := (sub+1)<<shift - 1
	return lo + (hi-lo)/2
}

// bucketIndex is the C histogram bucket that counts v (hist_record in
// loop.c does the same): v itself below 2*histSub, then histSub buckets per
// power of two, the last bucket holding everything beyond.
func bucketIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := 63 - bits.LeadingZeros64(v) - 10 // v >> shift is in [1024, 2048)
	if shift > histMaxShift {
		return histBuckets - 1
	}
	return 2*histSub + (shift-1)*histSub + int(v>>shift) - histSub
}

// bucketCount is one non-empty bucket of the C loop's histogram. A run
// fills a few dozen of its 32,768 buckets, so only those leave C memory:
// a dense copy would be a quarter megabyte of garbage per run, which a
// prober probing every second turns into a collection every few probes.
type bucketCount struct {
	idx int
	n   uint64
}

// nonEmptyFrom lists the non-empty buckets of part of a C histogram, the
// part that starts at bucket first.
func nonEmptyFrom(part []uint64, first int) []bucketCount {
	var out []bucketCount
	for i, c := range part {
		if c != 0 {
			out = append(out, bucketCount{first + i, c})
		}
	}
	return out
}

// mergeBuckets sums two bucket lists, each in bucket order, into one.
func mergeBuckets(a, b []bucketCount) []bucketCount {
	if len(a) == 0 {
		return b
	}
	out := make([]bucketCount, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0].idx < b[0].idx:
			out, a = append(out, a[0]), a[1:]
		case b[0].idx < a[0].idx:
			out, b = append(out, b[0]), b[1:]
		default:
			out = append(out, bucketCount{a[0].idx, a[0].n + b[0].n})
			a, b = a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// bucketsOf lists a C histogram's non-empty buckets by the values they
// stand for, clamped to the histogram's range.
func bucketsOf(hist []bucketCount) []Bucket {
	var out []Bucket
	for _, b := range hist {
		out = append(out, Bucket{Ns: min(bucketValue(b.idx), histMax), Count: b.n})
	}
	return out
}

// percentileOf is the value at percentile p (above 0) of buckets, as
// hdrhistogram's ValueAtPercentile gives it for a histogram of the
// buckets' values (TestPercentileMatchesHDR), without building one: the
// nearest rank, then the highest value equivalent to its bucket's. The
// C layout and HDR's at 3 digits agree bucket for bucket (unit buckets
// below 2048, then 1024 per power of two), so walking the few non-empty
// C buckets finds the same bucket as HDR's walk of all of its own.
func percentileOf(buckets []bucketCount, p float64) int64 {
	var total uint64
	for _, b := range buckets {
		total += b.n
	}
	if total == 0 {
		return 0
	}
	rank := min(p, 100)/100*float64(total) + 0.5
	switch {
	case !(rank >= 1):
		rank = 1
	case rank >= float64(total):
		rank = float64(total)
	}
	var seen uint64
	for _, b := range buckets {
		if seen += b.n; seen >= uint64(rank) {
			return highestEquivalent(min(bucketValue(b.idx), histMax))
		}
	}
	return 0
}

// highestEquivalent is the top of v's bucket in an HDR histogram of 3
// significant digits from 1 ns: v itself below 2048, else v's bucket of
// 2^shift values, 1024 of them per power of two.
func highestEquivalent(v int64) int64 {
	if v < 2*histSub {
		return v
	}
	shift := bits.Len64(uint64(v)) - 11
	return (v>>shift)<<shift + 1<<shift - 1
}

// Delivery is what a UD run sent and what arrived. UD drops a message
// that meets a lossy link or finds no receive posted, by design, so a UD
// run reports its loss rather than failing on it; thresholds decide.
type Delivery struct {
	// Sent: messages sent (bandwidth), or round trips begun (latency,
	// warm-up included).
	Sent uint64 `json:"sent"`
	// Received: messages received, or round trips answered within
	// loss_timeout.
	Received uint64 `json:"received"`
	// Lost: sent and never received; in latency, round trips with no
	// answer at all.
	Lost      uint64  `json:"lost"`
	LossRatio float64 `json:"loss_ratio"`
	// Late (latency): answers that came after loss_timeout; their round
	// trips are not in the latency statistics.
	Late uint64 `json:"late,omitempty"`
	// Silent (latency): the run ended early because nothing was answered
	// for stall_timeout.
	Silent bool `json:"silent,omitempty"`
	// ReceivedBytesPerSecond (bandwidth): the receiver's rate, first to
	// last arrival.
	ReceivedBytesPerSecond float64 `json:"received_bytes_per_second,omitempty"`
}

func (d *Delivery) ratio() {
	if d.Sent > 0 {
		d.LossRatio = float64(d.Lost) / float64(d.Sent)
	}
}

// ReceivedGbps is the receiver's rate in 10^9 bit/s.
func (d Delivery) ReceivedGbps() float64 { return d.ReceivedBytesPerSecond * 8 / 1e9 }
