// Package exposition keeps long-lived metric series by key and writes
// them for Prometheus: the exporter's probe metrics (package prober) are
// kept and served through it.
//
// A Set holds the series of some families (counters, gauges, and
// histograms with classic and native buckets) for every key; a key gives
// the values of the set's labels, and a family may add one label of its
// own (a status, a result). Update changes a key's series atomically;
// histograms take their samples under locks of their own; Forget drops
// a key's series. A Set is a prometheus.Collector, for a registry and
// promhttp (the /probe endpoint, and the reference of the tests), and
// Handler serves /metrics straight from it, in text 0.0.4 or delimited
// protobuf, gzipped when asked, merged by name with what a registry
// gathers. Each key's labels are rendered once, in both encodings; a
// scrape copies the values under the lock and appends numbers to a
// pooled buffer. The tests hold Handler to the registry's output byte
// for byte (text) and field for field (protobuf), and the histograms to
// client_golang's Histogram with the same options.
//
// # Why not client_golang
//
// client_golang can express everything here: HistogramVec with classic
// and native buckets and their reset, created timestamps, series made at
// 0, DeletePartialMatch to forget a key. What it does not do is make a
// key's series change together for a scrape (a scrape may see a probe's
// success before its count), which matters little. The engine is kept
// for what it costs instead, measured with BenchmarkVsClientGolang and
// BenchmarkRecordVsClientGolang (bench_test.go): the exporter's 13
// series per key and 7 labels, two keys per target, one probe each, the
// same families built with client_golang's HistogramVec, CounterVec and
// GaugeVec and served by promhttp. Medians of `go test -run '^$' -bench
// VsClientGolang -benchmem -count 6 ./exporter/exposition` (benchstat),
// Go 1.26, client_golang 1.25, on a 2-core AMD EPYC shared with other
// work (so the spread was up to +-70%, yet every scrape's difference had
// p = 0.002):
//
//	scrape of 1,000 targets x 2   engine                    client_golang
//	text                          3.9 ms, 45 KiB, 37 allocs 221 ms, 16.4 MiB, 295k allocs
//	text, gzip                    14 ms, 88 KiB             198 ms, 16.7 MiB
//	protobuf                      1.3 ms, 58 KiB, 34 allocs 175 ms, 18.7 MiB, 244k allocs
//	protobuf, gzip                11 ms, 200 KiB            215 ms, 19.0 MiB
//	scrape of 100 targets x 2
//	text                          0.43 ms, 34 KiB           12.6 ms, 1.6 MiB
//	text, gzip                    1.6 ms, 39 KiB            13.1 ms, 1.7 MiB
//	protobuf                      0.17 ms, 36 KiB           10.8 ms, 1.9 MiB
//	protobuf, gzip                0.96 ms, 39 KiB           11.1 ms, 2.0 MiB
//	heap held per key             2.6 KiB                   16.6 KiB
//	2,000 probes filed            0.57 ms, 3 allocs         0.68 ms, 18 allocs
//
// A scrape takes 8-64 times less time at 100 targets and 14-137 times
// less at 1,000, and allocates 50-370 times less; the series hold a
// sixth of the heap. Filing probes costs about the same (the difference
// in time is not significant, p = 0.065). The bodies are the same (text
// byte for byte); gzipped, the engine's are 8-18% larger, since it
// compresses at gzip's fastest level (see Handler), which is part of its
// saving. So the engine stays: through client_golang, each scrape of
// 1,000 targets would take a fifth of a second and leave 17-19 MB of
// garbage.
package exposition
