package exposition

import (
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Handler serves /metrics: a Set's families written straight from its
// state (encode.go), merged by name with what a registry gathers (the
// exporter's own, Go and process metrics, which are few). It is also the
// Registerer the Set is registered on: it keeps the Set aside for
// itself, registering only its descriptions on the registry so that
// names are still checked against the other collectors, and passes
// every other collector through.
//
// It answers in delimited protobuf when asked for it, which Prometheus
// does when it ingests native histograms, and in the text format (0.0.4)
// otherwise, OpenMetrics requests included: Prometheus parses what the
// Content-Type says. The body is gzipped whenever the request accepts it,
// as Prometheus' always do, at gzip's fastest level: at 1,000 targets the
// default level cost more CPU than the rest of the scrape, for a body a
// fifth smaller.
type Handler struct {
	reg *prometheus.Registry

	mu    sync.Mutex
	set   prometheus.Collector // the Set registered on the handler
	core  *core                // set's
	descs prometheus.Collector // set's descriptions, registered on reg
}

// NewHandler serves the metrics of reg and of the Set registered on the
// handler itself.
func NewHandler(reg *prometheus.Registry) *Handler {
	return &Handler{reg: reg}
}

// source is a Set of any key type.
type source interface {
	prometheus.Collector
	base() *core
}

func (s *Set[K]) base() *core { return s.core }

// Register keeps a Set for the handler to write; any other collector
// goes to the registry.
func (h *Handler) Register(c prometheus.Collector) error {
	s, ok := c.(source)
	if !ok {
		return h.reg.Register(c)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.set != nil {
		// Two would write their families side by side, unmerged: one
		// Handler serves one Set.
		return prometheus.AlreadyRegisteredError{ExistingCollector: h.set, NewCollector: c}
	}
	descs := setDescs{s.base()}
	if err := h.reg.Register(descs); err != nil {
		return err
	}
	h.set, h.core, h.descs = c, s.base(), descs
	return nil
}

// MustRegister registers cs, and panics on the first error.
func (h *Handler) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := h.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister removes c, as the registry's Unregister does.
func (h *Handler) Unregister(c prometheus.Collector) bool {
	if s, ok := c.(source); ok {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.core != s.base() {
			return false
		}
		h.reg.Unregister(h.descs)
		h.set, h.core, h.descs = nil, nil, nil
		return true
	}
	return h.reg.Unregister(c)
}

// setDescs describes a Set's families and collects nothing: the handler
// writes them.
type setDescs struct{ c *core }

func (d setDescs) Describe(ch chan<- *prometheus.Desc) { d.c.Describe(ch) }
func (d setDescs) Collect(chan<- prometheus.Metric)    {}

// scrapeFormats are the formats the handler writes, in its order of
// preference when a request accepts several.
var scrapeFormats = []expfmt.Format{expfmt.FmtProtoDelim, expfmt.FmtText}

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mfs, err := h.reg.Gather()
	if err != nil {
		// As promhttp's default (HTTPErrorOnError): a partial scrape
		// would look like series that vanished.
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	h.mu.Lock()
	c := h.core
	h.mu.Unlock()

	format := expfmt.NegotiateAccept(r.Header, scrapeFormats...)
	proto := format.FormatType() == expfmt.TypeProtoDelim
	hdr := w.Header()
	hdr.Add("Vary", "Accept")
	hdr.Add("Vary", "Accept-Encoding")
	hdr.Set("Content-Type", string(format))

	sc := scrapePool.Get().(*scrape)
	defer func() {
		sc.release()
		scrapePool.Put(sc)
	}()
	sc.w = w
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		hdr.Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			// An error here is the client's connection: nothing to tell it.
			_ = gz.Close()
			gzipPool.Put(gz)
		}()
		sc.w = gz
	}

	var only map[string]bool // promhttp's name[] filter
	if r.URL != nil {
		for _, n := range r.URL.Query()["name[]"] {
			if only == nil {
				only = map[string]bool{}
			}
			only[n] = true
		}
	}
	var order []int // c's families by name
	if c != nil {
		c.snapshot(sc)
		order = c.exposeOrder
	}
	write := func(f int) {
		fam := &c.families[f]
		if sc.err != nil || (only != nil && !only[fam.Name]) {
			return // the client is gone, or did not ask for f
		}
		if proto {
			sc.writeProto(f, fam)
		} else {
			sc.writeText(f, fam)
		}
	}
	enc := expfmt.NewEncoder(sc, format)
	next := 0 // in order
	for _, mf := range mfs {
		for ; next < len(order) && c.families[order[next]].Name < mf.GetName(); next++ {
			write(order[next])
		}
		if only != nil && !only[mf.GetName()] {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			return // the body has begun; all that is left is to stop
		}
	}
	for ; next < len(order); next++ {
		write(order[next])
	}
	if c, ok := enc.(expfmt.Closer); ok {
		_ = c.Close()
	}
	sc.flush()
}

// acceptsGzip is whether Accept-Encoding values accept gzip: named (or
// "*" for anything not named) with a weight above 0.
func acceptsGzip(values []string) bool {
	gzipQ, anyQ := -1.0, -1.0
	for _, v := range values {
		for _, coding := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(coding, ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
					if err != nil || !(f >= 0 && f <= 1) {
						f = 0 // a weight that makes no sense accepts nothing
					}
					q = f
				}
			}
			switch name = strings.TrimSpace(name); {
			case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
				gzipQ = max(gzipQ, q)
			case name == "*":
				anyQ = max(anyQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return anyQ > 0
}
