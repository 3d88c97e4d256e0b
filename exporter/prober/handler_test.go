package prober

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/rdma"
)

// handlerConfig has a latency-only module and one with a bandwidth probe.
const handlerConfig = `
modules:
  default: {interval: 1s, timeout: 500ms}
  rc_read:
    op: read
    sizes: [2, 4KiB]
    mode: busy_poll
    qp: {mtu: 1024}
    bandwidth: {size: 1MiB, duration: 1s, interval: 1m, tx_depth: 16}
    tls: {server_name: rdma.example, insecure_skip_verify: true}
`

// fakeHandler serves /probe with a transport that answers fail (nil:
// success) and records the peers and specs it was asked for.
type fakeHandler struct {
	*Handler
	mu    sync.Mutex
	peers []Peer
	specs []rdma.Test
}

func newFakeHandler(t *testing.T, fail error) *fakeHandler {
	t.Helper()
	c, err := config.Parse([]byte(handlerConfig))
	if err != nil {
		t.Fatal(err)
	}
	sc := config.NewSafeConfig(nil)
	sc.C = c
	f := &fakeHandler{Handler: NewHandler(sc, "rxe0", "secret", func() string { return "node-a" }, slog.New(slog.DiscardHandler))}
	f.transport = func(log *slog.Logger) Transport {
		return RunFunc(func(_ context.Context, p Peer, spec rdma.Test) (*rdma.Result, error) {
			f.mu.Lock()
			f.peers, f.specs = append(f.peers, p), append(f.specs, spec)
			f.mu.Unlock()
			log.Debug("control channel connected", "addr", p.Addr)
			if fail != nil {
				return nil, fail
			}
			return latencyResult(1500, 2500), nil
		})
	}
	return f
}

func (f *fakeHandler) get(t *testing.T, query string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	f.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/probe?"+query, nil))
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

func TestHandlerBadRequests(t *testing.T) {
	f := newFakeHandler(t, nil)
	for _, tc := range []struct{ query, want string }{
		{"", "want target=HOST:PORT and module=NAME"},
		{"target=10.0.0.1:18520", "want target=HOST:PORT and module=NAME"},
		{"module=default", "want target=HOST:PORT and module=NAME"},
		{"target=10.0.0.1:18520&module=nope", `unknown module "nope"`},
	} {
		if code, body := f.get(t, tc.query); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("/probe?%s: %d %q, want 400 with %q", tc.query, code, body, tc.want)
		}
	}
	if len(f.specs) != 0 {
		t.Errorf("a bad request probed %d times", len(f.specs))
	}
}

// TestHandlerProbes: one request probes each latency size of the module
// once, from the default device's default port, with the module's TLS,
// and returns the metrics; the bandwidth probe is left to its schedule.
func TestHandlerProbes(t *testing.T) {
	f := newFakeHandler(t, nil)
	code, body := f.get(t, "target=10.0.0.1:18520&module=rc_read")
	if code != http.StatusOK {
		t.Fatalf("status %d\n%s", code, body)
	}
	for _, want := range []string{
		`rdma_probe_success{device="rxe0",mode="busy_poll",op="read",port="1",size_bytes="2",source="node-a",target="10.0.0.1:18520"} 1`,
		`rdma_probe_success{device="rxe0",mode="busy_poll",op="read",port="1",size_bytes="4096",source="node-a",target="10.0.0.1:18520"} 1`,
		`rdma_probe_latency_seconds_count{device="rxe0",mode="busy_poll",op="read",port="1",size_bytes="4096",source="node-a",target="10.0.0.1:18520"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("response lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "rdma_probe_bandwidth_bytes_per_second") {
		t.Error("a /probe ran the bandwidth probe")
	}
	if len(f.specs) != 2 || f.specs[0].Size != 2 || f.specs[1].Size != 4096 {
		t.Fatalf("specs probed: %v, want the latency sizes 2 and 4096", f.specs)
	}
	wantPeer := Peer{Addr: "10.0.0.1:18520", Device: "rxe0", Port: 1, TLS: f.cfg.C.Modules["rc_read"].TLS.Ctrl()}
	for i, p := range f.peers {
		if p != wantPeer {
			t.Errorf("probe %d went to %+v, want %+v", i, p, wantPeer)
		}
		if s := f.specs[i]; s.StallTimeout != rdma.Duration(2500*time.Millisecond) {
			t.Errorf("probe %d: stall timeout %v, want half the module's 5s", i, time.Duration(s.StallTimeout))
		}
	}
}

func TestHandlerDebug(t *testing.T) {
	f := newFakeHandler(t, errors.New("responder refused"))
	code, body := f.get(t, "target=127.0.0.1:1&module=default&debug=true")
	if code != http.StatusOK {
		t.Fatalf("status %d\n%s", code, body)
	}
	for _, want := range []string{
		"Logs for the probe:\n",
		"level=DEBUG msg=probe target=127.0.0.1:1 module=default",
		`level=DEBUG msg="control channel connected" addr=127.0.0.1:1`,
		`msg="probe failed" target=127.0.0.1:1 module=default`,
		`err="responder refused"`,
		"Metrics that would have been returned:\n",
		`rdma_probe_success{device="rxe0",mode="event",op="write_imm",port="1",size_bytes="2",source="node-a",target="127.0.0.1:1"} 0`,
		`Module "default":`, "  op: write_imm\n", "  mode: event\n", "  sizes: [2B]\n", "  count: 10\n", "  warmup: 1\n",
		"  interval: 1s\n", "  timeout: 500ms\n",
		"  qp: {type: rc, timeout: 17, retry_cnt: 3, rnr_retry: 7, mtu: 0}  # mtu 0: the port's active MTU\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("debug response lacks %q:\n%s", want, body)
		}
	}
	if _, got := f.get(t, "target=127.0.0.1:1&module=rc_read&debug=true"); !strings.Contains(got, "  bandwidth: {size: 1MiB, duration: 1s, interval: 1m0s, tx_depth: 16}\n") ||
		!strings.Contains(got, `  tls: {ca_file: "", cert_file: "", server_name: "rdma.example", insecure_skip_verify: true}`) {
		t.Errorf("debug response of rc_read lacks its bandwidth or tls line:\n%s", got)
	}
}
