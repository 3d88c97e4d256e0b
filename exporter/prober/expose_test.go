package prober

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/rdmarun/rdmarun/exporter/exposition"
	"github.com/rdmarun/rdmarun/rdma"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// randomProbes files n keys' worth of every kind of outcome, some with
// samples spread over six decades (native buckets in several spans, the
// schema brought down), label values that need escaping, and a few keys
// forgotten again.
func randomProbes(m *Metrics, r *rand.Rand, n int) {
	at := time.Unix(1700000000, 123456789)
	statuses := []rdma.WCStatus{rdma.WCRetryExcErr, rdma.WCRemAccessErr, rdma.WCRNRRetryExcErr, rdma.WCStatus(17)}
	for i := range n {
		k := key
		k.Target = fmt.Sprintf("10.%d.%d.%d:18520", i%3, i/7, r.IntN(5))
		k.Size = []int{2, 64, 4096}[r.IntN(3)]
		if i%11 == 0 {
			k.Source = "a \"quoted\\ name\nwith a line"
		}
		bandwidth := i%9 == 0
		m.Init(k, bandwidth)
		for j := range r.IntN(4) {
			now := at.Add(time.Duration(i*10+j) * time.Second)
			switch r.IntN(6) {
			case 0:
				m.Record(k, nil, &rdma.CompletionError{Status: statuses[r.IntN(len(statuses))]}, time.Millisecond, now)
			case 1:
				m.Record(k, nil, &rdma.StallError{}, 3*time.Second, now)
			case 2:
				m.Record(k, nil, errors.New("refused"), time.Millisecond, now)
			case 3:
				m.RecordConnect(k, time.Duration(r.IntN(1e9)))
			default:
				if bandwidth {
					m.Record(k, &rdma.Result{Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{{BytesPerSecond: r.Float64() * 1e10}}}}, nil, time.Second, now)
					continue
				}
				samples := make([]int64, r.IntN(300))
				for s := range samples {
					samples[s] = int64(1e3 * math.Pow(10, 6*r.Float64()))
					if s%5 == 0 {
						samples[s] = 0
					}
				}
				m.Record(k, latencyResult(samples...), nil, time.Duration(r.IntN(1e9)), now)
			}
		}
		if i%13 == 0 {
			m.Forget(k)
		}
	}
}

// scrapeBody is h's response to a scrape with these headers, decompressed.
func scrapeBody(t *testing.T, h http.Handler, target string, headers map[string]string) (body []byte, contentType, encoding string) {
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

// TestScrapeHandlerMatchesRegistry: what exposition.Handler writes of the
// prober's families is what client_golang's registry gathers from the
// set's Collect and its encoders write: the same text byte for byte, and
// the same protobuf messages field for field (created timestamps, native
// spans and all), over every outcome, escaped labels, forgotten keys and
// histograms whose schema came down.
func TestScrapeHandlerMatchesRegistry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe func(m *Metrics)
	}{
		{name: "nothing", probe: func(*Metrics) {}},
		{name: "golden probes", probe: goldenProbes},
		{name: "random fleet", probe: func(m *Metrics) { randomProbes(m, rand.New(rand.NewPCG(14, 2)), 300) }},
		{name: "another random fleet", probe: func(m *Metrics) { randomProbes(m, rand.New(rand.NewPCG(14, 3)), 120) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := exposition.NewHandler(prometheus.NewRegistry())
			m := NewMetrics(h)
			tc.probe(m)
			ref := prometheus.NewPedanticRegistry()
			ref.MustRegister(m.set)
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
