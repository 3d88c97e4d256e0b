// Package discovery follows rdmarun_exporter's targets: the static list of the
// config, target files (read again when they change, and periodically in
// case a change was missed) and DNS names (resolved again every refresh).
// It hands its caller one merged, sorted set of targets whenever that set
// changes.
//
// A source that fails (an unreadable or invalid file, a lookup that errs)
// keeps its last good targets: a broken edit or a DNS outage must not
// silently stop the probing of a fleet, which would look like recovery on
// the dashboards.
package discovery

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/dnstargets"
	"github.com/rdmarun/rdmarun/exporter/config"
)

// The values of the source label. There are three and only three, so the
// self-metrics stay a handful of series however many files and names the
// config lists; which file or name failed is in the log.
const (
	SourceStatic = "static"
	SourceFile   = "file"
	SourceDNS    = "dns"
)

var sources = []string{SourceStatic, SourceFile, SourceDNS}

// Resolver is the part of *net.Resolver that discovery uses, so tests can
// answer without a DNS server.
type Resolver = dnstargets.Resolver

// Metrics are discovery's own series. They outlive any one Discoverer,
// since a config reload starts a new one and a registry takes each
// collector once.
type Metrics struct {
	targets     *prometheus.GaugeVec
	errors      *prometheus.CounterVec
	lastRefresh *prometheus.GaugeVec
}

// NewMetrics creates the metrics, registered on reg unless it is nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_discovery_targets",
			Help: "Targets probed, by the source they came from (static, file, dns).",
		}, []string{"source"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdmarun_exporter_discovery_errors_total",
			Help: "Failed reads of target files, failed DNS lookups and targets dropped for a name another source already uses, by source. The source keeps its last good targets.",
		}, []string{"source"}),
		lastRefresh: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rdmarun_exporter_discovery_last_refresh_timestamp_seconds",
			Help: "When a target file was last read or a DNS name last resolved without error, by source, in seconds since the epoch.",
		}, []string{"source"}),
	}
	// Every source's series exists from the start, so that an alert on
	// increase(errors_total) sees 0 rather than nothing.
	for _, s := range sources {
		m.targets.WithLabelValues(s)
		m.errors.WithLabelValues(s)
		m.lastRefresh.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.targets, m.errors, m.lastRefresh)
	}
	return m
}

func (m *Metrics) fail(source string) { m.errors.WithLabelValues(source).Inc() }

func (m *Metrics) refreshed(source string, now time.Time) {
	m.lastRefresh.WithLabelValues(source).Set(float64(now.UnixNano()) / 1e9)
}

// Option changes a Discoverer's defaults.
type Option func(*Discoverer)

// WithResolver sets the resolver of DNS names; the default is
// net.DefaultResolver.
func WithResolver(r Resolver) Option { return func(d *Discoverer) { d.resolver = r } }

// WithLogger sets where failures and changes are logged.
func WithLogger(l *slog.Logger) Option { return func(d *Discoverer) { d.logger = l } }

// WithMetrics sets the metrics to update; the default is a set registered
// nowhere.
func WithMetrics(m *Metrics) Option { return func(d *Discoverer) { d.metrics = m } }

// WithFileInterval sets how often target files are read even when no
// change was notified (default 30 s). Notifications are lost in ways no
// watcher can see (network file systems, a directory created after the
// start), so the periodic read bounds how long a change can go unseen.
func WithFileInterval(i time.Duration) Option { return func(d *Discoverer) { d.fileInterval = i } }

// WithPrevious starts from the last good targets of prev, the
// Discoverer of the configuration before a reload, which must have
// returned from Run: a file that is invalid or a name that fails right
// after a reload then keeps its targets, as it would have without the
// reload. A file is matched by path, a name by name and port.
func WithPrevious(prev *Discoverer) Option { return func(d *Discoverer) { d.prev = prev } }

// WithLookupTimeout bounds one refresh of one DNS name, SRV hosts included
// (default 10 s, and never more than the name's refresh interval).
func WithLookupTimeout(t time.Duration) Option { return func(d *Discoverer) { d.lookupTimeout = t } }

// Discoverer follows the targets of one configuration.
type Discoverer struct {
	cfg           *config.Config
	resolver      Resolver
	logger        *slog.Logger
	metrics       *Metrics
	fileInterval  time.Duration
	lookupTimeout time.Duration
	// settle is how long after a file change notification the files are
	// read: one save is often several events (truncate, write, rename),
	// and reading after the first could see a half-written file.
	settle time.Duration
	// noWatch leaves out the watcher, so tests can check that the
	// periodic read alone finds a change.
	noWatch bool

	prev  *Discoverer // until Run took its answers
	files *fileSource // the sources of Run, for the next Discoverer
	dns   []*dnsSource
}

// New returns a Discoverer for the targets of cfg. The modules of cfg are
// the ones targets from files may name.
func New(cfg *config.Config, opts ...Option) *Discoverer {
	d := &Discoverer{
		cfg:           cfg,
		resolver:      net.DefaultResolver,
		fileInterval:  30 * time.Second,
		lookupTimeout: 10 * time.Second,
		settle:        100 * time.Millisecond,
	}
	for _, o := range opts {
		o(d)
	}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	if d.metrics == nil {
		d.metrics = NewMetrics(nil)
	}
	return d
}

// update is a source's new targets: the files together, or one DNS name.
type update struct {
	source  string
	index   int // of the DNS name in the config
	targets []config.Target
}

// Run follows the targets until ctx ends. It calls onChange with the
// first set once every file was read and every name looked up (each
// lookup bounded by the lookup timeout), then again whenever the set
// changes, always from Run's goroutine, so one call ends before the next
// starts. Run returns once everything it started has stopped. A
// Discoverer runs once.
func (d *Discoverer) Run(ctx context.Context, onChange func([]config.Target)) {
	ctx, cancel := context.WithCancel(ctx)
	files := newFileSource(d, d.cfg.Targets.Files)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		// Last: the file goroutine reads the watcher until it stops.
		files.close()
	}()

	dns := make([]*dnsSource, len(d.cfg.Targets.DNS))
	for i, t := range d.cfg.Targets.DNS {
		dns[i] = newDNSSource(d, t)
	}
	if p := d.prev; p != nil {
		files.seed(p.files)
		for _, s := range dns {
			s.seed(p.dns)
		}
		// Dropped, or every reload would keep all the ones before alive.
		d.prev = nil
	}
	d.files, d.dns = files, dns

	// The watch starts before the first read, so a change made between
	// the two is not missed.
	files.watch()
	fileTargets := files.read()

	dnsTargets := make([][]config.Target, len(dns))
	var first sync.WaitGroup
	for i, s := range dns {
		first.Go(func() { dnsTargets[i] = s.refresh(ctx) })
	}
	first.Wait()
	if ctx.Err() != nil {
		return
	}

	d.metrics.refreshed(SourceStatic, time.Now())
	m := merger{d: d, static: d.cfg.Targets.Static, files: fileTargets, dns: dnsTargets}
	current := m.merge()
	onChange(slices.Clone(current))

	updates := make(chan update)
	send := func(u update) bool {
		select {
		case updates <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if len(d.cfg.Targets.Files) > 0 {
		wg.Go(func() { files.run(ctx, send) })
	}
	for i, s := range dns {
		wg.Go(func() { s.run(ctx, i, send) })
	}
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			switch u.source {
			case SourceFile:
				m.files = u.targets
			case SourceDNS:
				m.dns[u.index] = u.targets
			}
			if next := m.merge(); !slices.Equal(next, current) {
				added, removed := diffNames(next, current), diffNames(current, next)
				d.logger.Info("targets changed", "targets", len(next), "added", len(added), "removed", len(removed))
				d.logger.Debug("targets changed", "added", added, "removed", removed)
				current = next
				onChange(slices.Clone(current))
			}
		}
	}
}

// merger joins the sources' targets into one set.
type merger struct {
	d      *Discoverer
	static []config.Target
	files  []config.Target
	dns    [][]config.Target
	// clashes are the dropped targets already counted, by source and
	// name, so that a clash that lasts is counted and logged once, not on
	// every later change.
	clashes map[string]bool
}

// merge returns the targets sorted by name, each name once. Names are the
// target label, so two targets of one name would write into each other's
// series: the first by source (static, then files in config order, then
// DNS) wins and a different target of the same name is dropped. The same
// target listed twice is simply one.
func (m *merger) merge() []config.Target {
	var out []config.Target
	index := map[string]int{} // name -> source, for the error and the count
	count := map[string]int{}
	clashes := map[string]bool{}
	add := func(source string, ts []config.Target) {
		for _, t := range ts {
			i, seen := index[t.Name]
			switch {
			case !seen:
				index[t.Name] = len(out)
				out = append(out, t)
				count[source]++
			case out[i] != t:
				key := source + "\x00" + t.Name
				clashes[key] = true
				if !m.clashes[key] {
					m.d.metrics.fail(source)
					m.d.logger.Warn("target dropped: another target has its name", "source", source, "name", t.Name, "address", t.Address, "kept_address", out[i].Address)
				}
			}
		}
	}
	add(SourceStatic, m.static)
	add(SourceFile, m.files)
	for _, ts := range m.dns {
		add(SourceDNS, ts)
	}
	m.clashes = clashes
	for _, s := range sources {
		m.d.metrics.targets.WithLabelValues(s).Set(float64(count[s]))
	}
	slices.SortFunc(out, func(a, b config.Target) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// diffNames lists the names in a that b lacks, for the log.
func diffNames(a, b []config.Target) []string {
	inB := make(map[string]bool, len(b))
	for _, t := range b {
		inB[t.Name] = true
	}
	var out []string
	for _, t := range a {
		if !inB[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out
}
