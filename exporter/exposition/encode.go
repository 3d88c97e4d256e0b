package exposition

import (
	"encoding/binary"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// This file writes a Set's families straight from its state, in the text
// format (0.0.4) and in delimited protobuf, for Handler. Each key's
// labels are rendered once, when its series are created, in both
// encodings; a scrape copies the values under the lock and then only
// appends numbers with strconv to a pooled buffer, which it sends in
// chunks. Collect (collect.go) stays the reference: the tests hold the
// two to the same output.

// renderedLabels is one key's label set as a scrape writes it.
type renderedLabels struct {
	// text is `{name="value",...` without the closing brace, so that a
	// histogram's buckets can add their le label.
	text string
	// proto is the label fields of a protobuf Metric: one LabelPair
	// (field 1) per label.
	proto string
	// textAt[i] and protoAt[i] are where label i starts in text (at the
	// comma before it) and in proto, and [len] their ends: a family's
	// own label goes in at its place in the order by name, so that the
	// key's labels are rendered once for all its series.
	textAt, protoAt []int32
}

// renderedLabel is a family's own label with one value, rendered once
// per Set: `,name="value"` and its LabelPair field.
type renderedLabel struct{ text, proto string }

// renderLabels renders lps, which are sorted by name as the registry
// sorts them. New has checked that the names need no escaping.
func renderLabels(lps []*dto.LabelPair) *renderedLabels {
	r := &renderedLabels{textAt: make([]int32, len(lps)+1), protoAt: make([]int32, len(lps)+1)}
	text := []byte{'{'}
	var proto []byte
	for i, lp := range lps {
		r.textAt[i], r.protoAt[i] = int32(len(text)), int32(len(proto))
		if i > 0 {
			text = append(text, ',')
		}
		l := renderLabel(lp.GetName(), lp.GetValue())
		text = append(text, l.text[1:]...)
		proto = append(proto, l.proto...)
	}
	r.textAt[len(lps)], r.protoAt[len(lps)] = int32(len(text)), int32(len(proto))
	r.text, r.proto = string(text), string(proto)
	return r
}

func renderLabel(name, value string) *renderedLabel {
	text := append([]byte{','}, name...)
	text = append(text, `="`...)
	text = appendEscaped(text, value, true)
	text = append(text, '"')
	pair := appendStringField(nil, 1, name)
	pair = appendStringField(pair, 2, value)
	return &renderedLabel{text: string(text), proto: string(appendBytesField(nil, 1, pair))}
}

// appendEscaped escapes as the text format wants: a backslash and a new
// line always, a double quote in a label value.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// The protobuf wire format, as much of it as the client_model messages
// need.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field<<3|wire))
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

func appendDoubleField(b []byte, field int, v float64) []byte {
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), math.Float64bits(v))
}

func appendStringField(b []byte, field int, s string) []byte {
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(s)))
	return append(b, s...)
}

func appendBytesField(b []byte, field int, p []byte) []byte {
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(p)))
	return append(b, p...)
}

func varintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func zigzag32(v int32) uint64 { return uint64(uint32(v<<1) ^ uint32(v>>31)) }

func zigzag64(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// appendTimestamp appends a google.protobuf.Timestamp as field: a proto3
// message, whose zero fields are left out.
func appendTimestamp(b []byte, field int, t time.Time) []byte {
	sec, nanos := t.Unix(), int32(t.Nanosecond())
	n := 0
	if sec != 0 {
		n += 1 + varintLen(uint64(sec))
	}
	if nanos != 0 {
		n += 1 + varintLen(uint64(nanos))
	}
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(n))
	if sec != 0 {
		b = appendVarintField(b, 1, uint64(sec))
	}
	if nanos != 0 {
		b = appendVarintField(b, 2, uint64(nanos))
	}
	return b
}

// appendCounterCreated appends a Counter's created_timestamp (field 3).
func appendCounterCreated(b []byte, ts *timestamppb.Timestamp) []byte {
	return appendTimestamp(b, 3, ts.AsTime())
}

// familyExposition is what a scrape writes of a family besides its
// series: its header in each format, and its samples' names.
type familyExposition struct {
	textHeader string // # HELP and # TYPE
	// protoHeader is the MetricFamily's name, help and type fields; the
	// metrics (field 4) follow.
	protoHeader string
	// metricField is the Metric field that holds the value: counter (3),
	// gauge (2) or histogram (7).
	metricField int
	// The names of a histogram's text samples, and what follows the
	// labels of each classic bucket's sample, +Inf's last.
	bucket, sum, count string
	leText             []string
}

func newFamilyExposition(d *Family) familyExposition {
	var e familyExposition
	typ, dtoType := "counter", dto.MetricType_COUNTER
	e.metricField = 3
	switch d.Kind {
	case KindGauge:
		typ, dtoType, e.metricField = "gauge", dto.MetricType_GAUGE, 2
	case KindHistogram:
		typ, dtoType, e.metricField = "histogram", dto.MetricType_HISTOGRAM, 7
	}
	e.textHeader = "# HELP " + d.Name + " " + string(appendEscaped(nil, d.Help, false)) + "\n# TYPE " + d.Name + " " + typ + "\n"
	h := appendStringField(nil, 1, d.Name)
	h = appendStringField(h, 2, d.Help)
	e.protoHeader = string(appendVarintField(h, 3, uint64(dtoType)))
	if d.Kind == KindHistogram {
		e.bucket, e.sum, e.count = d.Name+"_bucket", d.Name+"_sum", d.Name+"_count"
		for _, ub := range d.Buckets {
			e.leText = append(e.leText, `,le="`+strconv.FormatFloat(ub, 'g', -1, 64)+`"} `)
		}
		e.leText = append(e.leText, `,le="+Inf"} `)
	}
	return e
}

// exposedSeries is one series as a scrape copied it.
type exposedSeries struct {
	labels  *renderedLabels
	extra   *renderedLabel // the family's own label, if it has one
	created string         // a counter's created_timestamp field, encoded
	v       float64        // a counter's or gauge's value
	h       *Histogram     // a histogram, read under its own lock when written
}

// histogramSnapshot is a Histogram as one scrape read it, and its native
// buckets in spans and deltas.
type histogramSnapshot struct {
	bounds           []float64
	counts           []uint64
	count, zeroCount uint64
	sum              float64
	schema           int32
	created          time.Time
	buckets          []nativeBucket
	spans            []spanValues
	deltas           []int64
}

// snapshot copies h into s; the native buckets only if native.
func (h *Histogram) snapshot(s *histogramSnapshot, native bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.bounds, s.counts = h.bounds, append(s.counts[:0], h.counts...)
	s.count, s.zeroCount, s.sum, s.schema, s.created = h.count, h.zeroCount, h.sum, h.schema, h.created
	s.buckets = s.buckets[:0]
	if native {
		s.buckets = append(s.buckets, h.buckets...)
	}
}

// encodeSpans encodes the native buckets as Histogram.spans does.
func (s *histogramSnapshot) encodeSpans() {
	s.spans, s.deltas = s.spans[:0], s.deltas[:0]
	prev, next := int64(0), 0
	for i, b := range s.buckets {
		if gap := b.key - next; i == 0 || gap > 2 {
			s.spans = append(s.spans, spanValues{offset: int32(gap)})
		} else {
			for range gap {
				s.deltas = append(s.deltas, -prev)
				prev = 0
				s.spans[len(s.spans)-1].length++
			}
		}
		s.deltas = append(s.deltas, b.count-prev)
		prev = b.count
		s.spans[len(s.spans)-1].length++
		next = b.key + 1
	}
}

// scrape is one scrape's buffers, pooled: a scrape of 1,000 targets
// copies 13,000 series and writes megabytes, and the next scrape can use
// the same memory.
type scrape struct {
	series [][]exposedSeries // by family
	hist   histogramSnapshot

	w   io.Writer
	err error // the first error writing to w
	out []byte
	// body is the protobuf family being written: a delimited message
	// starts with its length. inner is the value of one Metric.
	body, inner []byte
}

var scrapePool = sync.Pool{New: func() any { return new(scrape) }}

// flushAt is how much a scrape buffers before writing it out.
const flushAt = 32 << 10

// snapshot copies the value and rendered labels of every series, in the
// registry's order. Only this holds c.mu: an Update waits for the copy,
// not for the encoding, and a scrape never waits for a probe.
func (c *core) snapshot(sc *scrape) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ordered {
		c.sortSeries()
	}
	for len(sc.series) < len(c.order) {
		sc.series = append(sc.series, nil)
	}
	for f, refs := range c.order {
		fam := &c.families[f]
		list := slices.Grow(sc.series[f][:0], len(refs))
		for _, r := range refs {
			e := exposedSeries{labels: r.s.rendered, created: r.s.createdProto}
			switch {
			case fam.Kind == KindHistogram:
				e.h = r.histogram(fam)
			case fam.Label != "":
				lv := &r.s.labelled[fam.at][r.i]
				e.extra, e.v = lv.rendered, lv.v
			default:
				e.v = r.s.values[fam.at].v
			}
			list = append(list, e)
		}
		sc.series[f] = list
	}
}

// release drops the scrape's references to series, so that a forgotten
// series can go while its scrape sits in the pool.
func (sc *scrape) release() {
	for f := range sc.series {
		clear(sc.series[f])
		sc.series[f] = sc.series[f][:0]
	}
	sc.hist.bounds = nil
	sc.w, sc.err = nil, nil
}

// Write buffers p: the registry's encoders write through it.
func (sc *scrape) Write(p []byte) (int, error) {
	sc.out = append(sc.out, p...)
	sc.flushIfFull()
	return len(p), sc.err
}

func (sc *scrape) flushIfFull() {
	if len(sc.out) >= flushAt {
		sc.flush()
	}
}

func (sc *scrape) flush() {
	sc.send(sc.out)
	sc.out = sc.out[:0]
}

func (sc *scrape) send(p []byte) {
	if sc.err == nil && len(p) > 0 {
		_, sc.err = sc.w.Write(p)
	}
}

// writeText writes family f of the snapshot in the text format.
func (sc *scrape) writeText(f int, fam *family) {
	series := sc.series[f]
	if len(series) == 0 {
		return // as the registry: a family without series is left out
	}
	e := &fam.expo
	sc.out = append(sc.out, e.textHeader...)
	for i := range series {
		s := &series[i]
		switch {
		case s.h != nil:
			sc.writeTextHistogram(fam, s)
		case s.extra != nil:
			at := s.labels.textAt[fam.extraAt]
			sc.out = append(sc.out, fam.Name...)
			sc.out = append(sc.out, s.labels.text[:at]...)
			sc.out = append(sc.out, s.extra.text...)
			sc.out = appendTextSample(sc.out, "", s.labels.text[at:], "} ", s.v)
		default:
			sc.out = appendTextSample(sc.out, fam.Name, s.labels.text, "} ", s.v)
		}
		sc.flushIfFull()
	}
}

func appendTextSample(b []byte, name, labels, closing string, v float64) []byte {
	b = append(b, name...)
	b = append(b, labels...)
	b = append(b, closing...)
	// The text encoder's number format: 'g' writes 1, 0, NaN and +Inf
	// as it does.
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	return append(b, '\n')
}

func (sc *scrape) writeTextHistogram(fam *family, s *exposedSeries) {
	e := &fam.expo
	hs := &sc.hist
	s.h.snapshot(hs, false)
	var cum uint64
	nb := len(hs.bounds)
	for i := range nb {
		cum += hs.counts[i]
		// Counts are written as floats, as the text encoder does.
		sc.out = appendTextSample(sc.out, e.bucket, s.labels.text, e.leText[i], float64(cum))
	}
	sc.out = appendTextSample(sc.out, e.bucket, s.labels.text, e.leText[nb], float64(hs.count))
	sc.out = appendTextSample(sc.out, e.sum, s.labels.text, "} ", hs.sum)
	sc.out = appendTextSample(sc.out, e.count, s.labels.text, "} ", float64(hs.count))
}

// writeProto writes family f of the snapshot as a delimited MetricFamily
// message.
func (sc *scrape) writeProto(f int, fam *family) {
	series := sc.series[f]
	if len(series) == 0 {
		return
	}
	e := &fam.expo
	body := append(sc.body[:0], e.protoHeader...)
	for i := range series {
		s := &series[i]
		inner := sc.inner[:0]
		switch {
		case s.h != nil:
			inner = sc.appendProtoHistogram(inner, s.h)
		case e.metricField == 3: // counter
			inner = appendDoubleField(inner, 1, s.v)
			inner = append(inner, s.created...)
		default: // gauge
			inner = appendDoubleField(inner, 1, s.v)
		}
		sc.inner = inner
		labels, extra, at := s.labels.proto, "", len(s.labels.proto)
		if s.extra != nil {
			extra, at = s.extra.proto, int(s.labels.protoAt[fam.extraAt])
		}
		n := len(labels) + len(extra) + 1 + varintLen(uint64(len(inner))) + len(inner)
		body = binary.AppendUvarint(appendTag(body, 4, wireBytes), uint64(n))
		body = append(body, labels[:at]...)
		body = append(body, extra...)
		body = append(body, labels[at:]...)
		body = appendBytesField(body, e.metricField, inner)
	}
	sc.body = body
	sc.out = binary.AppendUvarint(sc.out, uint64(len(body)))
	sc.flush()
	sc.send(body)
}

// appendProtoHistogram appends the fields of h's Histogram message, the
// ones Histogram.write sets.
func (sc *scrape) appendProtoHistogram(b []byte, h *Histogram) []byte {
	hs := &sc.hist
	h.snapshot(hs, true)
	b = appendVarintField(b, 1, hs.count)
	b = appendDoubleField(b, 2, hs.sum)
	var cum uint64
	for i, ub := range hs.bounds {
		cum += hs.counts[i]
		b = binary.AppendUvarint(appendTag(b, 3, wireBytes), uint64(1+varintLen(cum)+1+8))
		b = appendVarintField(b, 1, cum)
		b = appendDoubleField(b, 2, ub)
	}
	b = appendVarintField(b, 5, zigzag32(hs.schema))
	b = appendDoubleField(b, 6, nativeZeroThreshold)
	b = appendVarintField(b, 7, hs.zeroCount)
	hs.encodeSpans()
	for _, sp := range hs.spans {
		off := zigzag32(sp.offset)
		b = binary.AppendUvarint(appendTag(b, 12, wireBytes), uint64(1+varintLen(off)+1+varintLen(uint64(sp.length))))
		b = appendVarintField(b, 1, off)
		b = appendVarintField(b, 2, uint64(sp.length))
	}
	for _, d := range hs.deltas {
		b = appendVarintField(b, 13, zigzag64(d))
	}
	return appendTimestamp(b, 15, hs.created)
}
