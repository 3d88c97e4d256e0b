package exposition

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rdmarun/rdmarun/internal/promtooltest"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// The Accept headers of a scrape: Prometheus' own, with the default
// scrape protocols and with those it uses to ingest native histograms.
const (
	acceptProtobuf    = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	acceptPrometheus  = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"
	acceptNativeHists = acceptProtobuf + ";q=0.6," + acceptPrometheus
)

// scrapeBody is h's response to a scrape with these headers, decompressed.
func scrapeBody(t *testing.T, h *Handler, target string, headers map[string]string) (body []byte, contentType, encoding string) {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("scrape: %d %s", w.Code, w.Body)
	}
	body = w.Body.Bytes()
	encoding = w.Header().Get("Content-Encoding")
	if encoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return body, w.Header().Get("Content-Type"), encoding
}

// decodeProto reads a delimited protobuf exposition.
func decodeProto(t *testing.T, body []byte) []*dto.MetricFamily {
	t.Helper()
	var mfs []*dto.MetricFamily
	r := bufio.NewReader(bytes.NewReader(body))
	for {
		mf := &dto.MetricFamily{}
		err := protodelim.UnmarshalFrom(r, mf)
		if errors.Is(err, io.EOF) {
			return mfs
		}
		if err != nil {
			t.Fatalf("family %d: %v", len(mfs), err)
		}
		mfs = append(mfs, mf)
	}
}

// TestHandlerMatchesRegistry: what Handler writes from a Set's state is
// what client_golang's registry gathers from Collect and its encoders
// write: the same text byte for byte, and the same protobuf messages
// field for field (created timestamps, native spans and all), over every
// shape of series, escaped labels and help, forgotten keys and
// histograms whose schema came down.
func TestHandlerMatchesRegistry(t *testing.T) {
	for _, tc := range []struct {
		name string
		fill func(s *Set[testKey])
	}{
		{name: "nothing", fill: func(*Set[testKey]) {}},
		{name: "fixed", fill: fixedFill},
		{name: "random", fill: func(s *Set[testKey]) { randomFill(s, rand.New(rand.NewPCG(14, 2)), 300) }},
		{name: "another random", fill: func(s *Set[testKey]) { randomFill(s, rand.New(rand.NewPCG(14, 3)), 120) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(prometheus.NewRegistry())
			s := newTestSet(t)
			h.MustRegister(s)
			tc.fill(s)
			ref := prometheus.NewPedanticRegistry()
			ref.MustRegister(s)
			want, err := ref.Gather()
			if err != nil {
				t.Fatal(err)
			}

			var wantText bytes.Buffer
			for _, mf := range want {
				if _, err := expfmt.MetricFamilyToText(&wantText, mf); err != nil {
					t.Fatal(err)
				}
			}
			text, _, _ := scrapeBody(t, h, "/metrics", nil)
			if !bytes.Equal(text, wantText.Bytes()) {
				t.Errorf("text differs from the registry's:\n%s", lineDiff(text, wantText.Bytes()))
			}

			got := decodeProto(t, mustBody(scrapeBody(t, h, "/metrics", map[string]string{"Accept": acceptProtobuf})))
			if len(got) != len(want) {
				t.Fatalf("%d protobuf families, want %d", len(got), len(want))
			}
			for i := range want {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("protobuf family %s differs:\n got %v\nwant %v", want[i].GetName(), firstDiff(got[i], want[i]), firstDiff(want[i], got[i]))
				}
			}
		})
	}
}

func mustBody(body []byte, _, _ string) []byte { return body }

// firstDiff is the first metric of a that b does not have, to keep a
// failure short.
func firstDiff(a, b *dto.MetricFamily) string {
	for i, m := range a.GetMetric() {
		if i >= len(b.GetMetric()) || !proto.Equal(m, b.GetMetric()[i]) {
			return fmt.Sprintf("metric %d: %v", i, m)
		}
	}
	return fmt.Sprintf("%d metrics", len(a.GetMetric()))
}

// lineDiff is the first line where got and want differ.
func lineDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got %q\nwant %q", i+1, gl, wl)
		}
	}
	return "no difference"
}

// TestHandlerFormats: the handler's answer to each kind of request:
// the format and compression it negotiates, the registry's own families
// merged in by name, promhttp's name[] filter; and every answer parses
// and passes promtool's lint.
func TestHandlerFormats(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_first_total", Help: "Sorts before the set's families."})
	between := prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdma_test_others_seconds", Help: "Sorts among the set's families."})
	last := prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdmarun_exporter_last", Help: "Sorts after the set's families."})
	reg.MustRegister(first, between, last)
	h := NewHandler(reg)
	s := newTestSet(t)
	h.MustRegister(s)
	fixedFill(s)
	wantNames := []string{"a_first_total", "rdma_test_errors_total", "rdma_test_last_seconds", "rdma_test_latency_seconds",
		"rdma_test_others_seconds", "rdma_test_probes_total", "rdma_test_sent_total", "rdma_test_up", "rdmarun_exporter_last"}

	const text, protobuf = "text/plain; version=0.0.4", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
	for _, tc := range []struct {
		name     string
		target   string
		headers  map[string]string
		wantType string // how Content-Type starts
		wantGzip bool
		names    []string
	}{
		{name: "no headers", target: "/metrics", wantType: text, names: wantNames},
		{name: "prometheus default", target: "/metrics", headers: map[string]string{"Accept": acceptPrometheus, "Accept-Encoding": "gzip"}, wantType: text, wantGzip: true, names: wantNames},
		{name: "openmetrics only", target: "/metrics", headers: map[string]string{"Accept": "application/openmetrics-text;version=1.0.0"}, wantType: text, names: wantNames},
		{name: "native histograms", target: "/metrics", headers: map[string]string{"Accept": acceptNativeHists, "Accept-Encoding": "gzip"}, wantType: protobuf, wantGzip: true, names: wantNames},
		{name: "protobuf", target: "/metrics", headers: map[string]string{"Accept": acceptProtobuf}, wantType: protobuf, names: wantNames},
		{name: "gzip refused", target: "/metrics", headers: map[string]string{"Accept-Encoding": "gzip;q=0, identity"}, wantType: text, names: wantNames},
		{name: "name filter", target: "/metrics?name[]=rdma_test_probes_total&name[]=a_first_total", headers: map[string]string{"Accept-Encoding": "gzip"},
			wantType: text, wantGzip: true, names: []string{"a_first_total", "rdma_test_probes_total"}},
		{name: "name filter, protobuf", target: "/metrics?name[]=rdma_test_latency_seconds", headers: map[string]string{"Accept": acceptProtobuf},
			wantType: protobuf, names: []string{"rdma_test_latency_seconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, ctype, enc := scrapeBody(t, h, tc.target, tc.headers)
			if !strings.HasPrefix(ctype, tc.wantType) {
				t.Errorf("Content-Type %q, want %q", ctype, tc.wantType)
			}
			if (enc == "gzip") != tc.wantGzip {
				t.Errorf("Content-Encoding %q, want gzip: %v", enc, tc.wantGzip)
			}
			var mfs []*dto.MetricFamily
			if tc.wantType == protobuf {
				mfs = decodeProto(t, body)
			} else {
				parser := expfmt.NewTextParser(model.LegacyValidation)
				parsed, err := parser.TextToMetricFamilies(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("text does not parse: %v\n%s", err, body)
				}
				// The parser returns a map: the order is checked on the
				// text itself.
				for _, name := range tc.names {
					mfs = append(mfs, parsed[name])
				}
				if len(parsed) != len(tc.names) {
					t.Errorf("%d families, want %d", len(parsed), len(tc.names))
				}
				checkOrder(t, body, tc.names)
				if out, err := promtooltest.CheckMetrics(t, body); err != nil || out != "" {
					t.Errorf("promtool check metrics: %v\n%s", err, out)
				}
			}
			var names []string
			for _, mf := range mfs {
				names = append(names, mf.GetName())
			}
			if strings.Join(names, " ") != strings.Join(tc.names, " ") {
				t.Errorf("families %v, want %v", names, tc.names)
			}
		})
	}
}

// checkOrder: the # TYPE lines of body name exactly names, in order.
func checkOrder(t *testing.T, body []byte, names []string) {
	t.Helper()
	var got []string
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			got = append(got, strings.Fields(rest)[0])
		}
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("families in the order %v, want %v", got, names)
	}
}

// TestHandlerRegisters: the handler keeps one Set for itself and still
// has the registry check its names against the others; other collectors
// go to the registry.
func TestHandlerRegisters(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewHandler(reg)
	m := newTestSet(t)
	h.MustRegister(m)
	fixedFill(m)
	scrapeBody(t, h, "/metrics", nil) // leaves its buffers in the pool
	if err := h.Register(m); err == nil {
		t.Error("registering the same Set twice: no error")
	}
	// Another key type, the same families and labels (the registry
	// keeps the labels of a name it has seen, even once unregistered).
	other, err := New(Labels[string]{Names: testLabels.Names, Values: func(k string) []string { return []string{k, "1", k, "write"} }}, testFamilies)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Register(other); err == nil {
		t.Error("a second Set: no error")
	}
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdma_test_up", Help: "clash"})
	if err := h.Register(clash); err == nil {
		t.Error("a collector with a family of the set's name: no error")
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "something_else", Help: "passes through"})
	h.MustRegister(g)
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 1 || mfs[0].GetName() != "something_else" {
		t.Errorf("registry gathers %v, %v; want the one gauge (the set's families are the handler's)", mfs, err)
	}
	if h.Unregister(other) {
		t.Error("Unregister of a Set never registered: true")
	}
	if !h.Unregister(m) || h.Unregister(m) {
		t.Error("Unregister of the Set: want true once")
	}
	// With no Set, a scrape (on buffers a scrape with series used
	// before) writes the registry's families only.
	if body, _, _ := scrapeBody(t, h, "/metrics", nil); !bytes.HasPrefix(body, []byte("# HELP something_else ")) || bytes.Contains(body, []byte("rdma_test")) {
		t.Errorf("scrape without a Set:\n%s", body)
	}
	if err := h.Register(other); err != nil {
		t.Errorf("another Set once the first is gone: %v", err)
	}
	if !h.Unregister(g) {
		t.Error("Unregister of the gauge")
	}
}

// TestAcceptsGzip: Accept-Encoding as RFC 9110 reads it.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"identity"}, false},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.001"}, true},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"*, gzip;q=0"}, false},
		{[]string{"identity", "gzip"}, true},
		{[]string{"gzip;q=NaN"}, false},
		{[]string{"gzip;q=2"}, false},
		{[]string{"gzipped"}, false},
	} {
		if got := acceptsGzip(tc.header); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.header, got, tc.want)
		}
	}
}

// FuzzAcceptsGzip: any header is read without a panic, and gzip is never
// chosen for a header that names neither it nor "*".
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "*;q=0.5, identity", "deflate, gzip;q=1.0, *;q=0.5", ";;,,=;q=", "x-gzip; q = 0.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		got := acceptsGzip([]string{h})
		if got && !strings.Contains(strings.ToLower(h), "gzip") && !strings.Contains(h, "*") {
			t.Errorf("%q accepts gzip", h)
		}
	})
}
