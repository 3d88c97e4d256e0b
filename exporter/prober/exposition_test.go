package prober

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/rdmarun/rdmarun/exporter/exposition"
	"github.com/rdmarun/rdmarun/internal/promtooltest"
	"github.com/rdmarun/rdmarun/rdma"
)

var update = flag.Bool("update", false, "rewrite testdata golden files from the current output")

// goldenProbes files, at fixed times, one of every outcome Record tells
// apart, over keys that differ in each label, so that the exposition holds
// every family, every label and every series a probe can create.
func goldenProbes(m *Metrics) {
	at := time.Unix(1700000000, 0)
	lat := key
	lat2 := key
	lat2.Target, lat2.Port = "10.0.0.2:18520", 2
	lat3 := key
	lat3.Op, lat3.Size, lat3.Mode, lat3.Device, lat3.Source = rdma.OpSend, 4096, rdma.ModeBusyPoll, "mlx5_0", "node-a"
	bw := key
	bw.Size = 1 << 20
	m.Init(lat, false)
	m.Init(lat2, false)
	m.Init(lat3, false)
	m.Init(bw, true)
	m.RecordConnect(lat, 120*time.Millisecond)
	m.RecordConnect(lat, 95*time.Millisecond) // a re-connect, as after a broken connection
	m.RecordConnect(bw, 2*time.Millisecond)
	m.Record(lat, latencyResult(1500, 1600, 25000, 700000), nil, 3*time.Millisecond, at)
	m.Record(lat, nil, &rdma.CompletionError{Status: rdma.WCRetryExcErr}, 40*time.Millisecond, at.Add(time.Second))
	m.Record(lat, nil, &rdma.CompletionError{Status: rdma.WCRemAccessErr}, 2*time.Millisecond, at.Add(2*time.Second))
	m.Record(lat2, nil, &rdma.StallError{}, 250*time.Millisecond, at)
	m.Record(lat2, nil, &rdma.PortDownError{Device: "rxe1", Port: 2, State: "DOWN"}, time.Millisecond, at)
	m.Record(lat3, nil, errors.New("responder refused"), 5*time.Millisecond, at)
	m.Record(bw, &rdma.Result{Bandwidth: &rdma.BandwidthStats{Directions: []rdma.Direction{{BytesPerSecond: 1.25e9}, {BytesPerSecond: 1e9}}}}, nil, time.Second, at)
	// A key that was never Init'ed: /probe and the scheduler always Init
	// first, but what Record alone creates is part of the contract too.
	lazy := key
	lazy.Target = "lazy:18520"
	m.Record(lazy, latencyResult(9000), nil, time.Millisecond, at)
}

// TestExpositionGolden: the text exposition of the same probes is the one
// in testdata, byte for byte, so a change in how the series are kept or
// encoded cannot drop or rename a family, a label or a series that a user
// queries; both as the registry gathers them and as exposition.Handler,
// which /metrics serves them with, writes them. Refresh with -update only for a
// change made on purpose.
func TestExpositionGolden(t *testing.T) {
	h := exposition.NewHandler(prometheus.NewRegistry())
	m := NewMetrics(h)
	goldenProbes(m)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.set)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&got, mf); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join("testdata", "exposition.txt")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("exposition differs from %s (run with -update if on purpose):\n%s", path, got.String())
	}
	if served, _, _ := scrapeBody(t, h, "/metrics", nil); !bytes.Equal(served, want) {
		t.Errorf("/metrics differs from %s:\n%s", path, lineDiff(served, want))
	}
	if out, err := promtooltest.CheckMetrics(t, got.Bytes()); err != nil || out != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestScrapeWhileProbing scrapes, in text and in protobuf, gzipped or
// not, two at a time, while probes record and targets come and go: run
// with -race, it is the test of Collect's and the scrape snapshot's
// locking, of the label pairs, rendered labels and timestamps that
// scrapes share, and of the pooled buffers of exposition.Handler. Every
// answer must parse.
func TestScrapeWhileProbing(t *testing.T) {
	t.Run("registry", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		scrapeWhileProbing(t, m, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Handler", func(t *testing.T) {
		h := exposition.NewHandler(prometheus.NewRegistry())
		m := NewMetrics(h)
		scrapeWhileProbing(t, m, h)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(m.set)
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	})
}

func scrapeWhileProbing(t *testing.T, m *Metrics, h http.Handler) {
	m.Init(key, false) // one series that stays, so that no scrape is empty
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := key
				k.Target = fmt.Sprintf("10.0.%d.%d:18520", w, i%20)
				if i%7 == 0 {
					m.Forget(k)
					continue
				}
				m.Init(k, false)
				var err error
				if i%5 == 0 {
					err = &rdma.CompletionError{Status: rdma.WCStatus(i % 20)}
				}
				m.Record(k, latencyResult(int64(1000+i%100000)), err, time.Millisecond, time.Now())
			}
		})
	}
	var scrapers sync.WaitGroup
	for s := range 2 {
		scrapers.Go(func() {
			for i := range 30 {
				req := httptest.NewRequest("GET", "/metrics", nil)
				if i%2 == 1 {
					req.Header.Set("Accept", acceptProtobuf)
				}
				if (i/2+s)%2 == 1 {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					t.Errorf("scrape %d: %d %s", i, w.Code, w.Body)
					return
				}
				if err := parseScrape(w); err != nil {
					t.Errorf("scrape %d: %v", i, err)
					return
				}
			}
		})
	}
	scrapers.Wait()
	close(stop)
	wg.Wait()
}

// parseScrape decodes a recorded scrape in its Content-Type and
// Content-Encoding.
func parseScrape(w *httptest.ResponseRecorder) error {
	var body io.Reader = w.Body
	if w.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return err
		}
		body = zr
	}
	dec := expfmt.NewDecoder(body, expfmt.ResponseFormat(w.Header()))
	families := 0
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		families++
	}
	if families == 0 {
		return errors.New("no families")
	}
	return nil
}
