package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// maxHostLookups bounds the SRV hosts resolved at once, so a large SRV
// answer does not open hundreds of sockets.
const maxHostLookups = 8

// dnsSource follows one DNS name.
type dnsSource struct {
	d        *Discoverer // nil for a one-shot Lookup, which logs and counts nothing
	resolver Resolver
	t        config.DNSTarget
	last     []config.Target // the last good answer, sorted by name
	lastErr  string          // so that a lasting failure is logged once
}

func newDNSSource(d *Discoverer, t config.DNSTarget) *dnsSource {
	return &dnsSource{d: d, resolver: d.resolver, t: t}
}

// Lookup resolves t once, as a refresh of a followed name does: an SRV
// name (starting with _) gives one target per record, named
// NAME/HOST:PORT, on the record's port; any other name one target per
// A/AAAA address, named NAME/ADDRESS, on t.Port. The targets are sorted
// by name. An SRV host that does not resolve is left out and its error
// returned beside the others, so a caller can tell a partial answer from
// a complete one. ctx bounds the whole lookup.
func Lookup(ctx context.Context, r Resolver, t config.DNSTarget) ([]config.Target, error) {
	s := &dnsSource{resolver: r, t: t}
	if t.SRV() {
		return s.lookupSRV(ctx)
	}
	return s.lookupHost(ctx)
}

// seed takes the last good answer of the same lookup from prev, with this
// configuration's module, device and device port.
func (s *dnsSource) seed(prev []*dnsSource) {
	for _, p := range prev {
		if p.t.Name != s.t.Name || p.t.Port != s.t.Port || p.last == nil {
			continue
		}
		s.last = make([]config.Target, len(p.last))
		for i, t := range p.last {
			t.Module, t.Device, t.DevicePort = s.t.Module, s.t.Device, s.t.DevicePort
			s.last[i] = t
		}
		return
	}
}

// run refreshes the name every Refresh and sends its targets when they
// change. The first answer was already taken by Run.
func (s *dnsSource) run(ctx context.Context, index int, send func(update) bool) {
	tick := time.NewTicker(s.t.Refresh)
	defer tick.Stop()
	sent := s.last
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ts := s.refresh(ctx)
		if slices.Equal(ts, sent) {
			continue
		}
		if !send(update{source: SourceDNS, index: index, targets: ts}) {
			return
		}
		sent = ts
	}
}

// refresh looks the name up and returns its targets: the new answer, or
// the last good one when the lookup failed.
func (s *dnsSource) refresh(ctx context.Context) []config.Target {
	timeout := min(s.d.lookupTimeout, s.t.Refresh)
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var ts []config.Target
	var err error
	if s.t.SRV() {
		ts, err = s.lookupSRV(lctx)
	} else {
		ts, err = s.lookupHost(lctx)
	}
	if ctx.Err() != nil {
		return s.last // stopping: not a failure of the name
	}
	if err != nil {
		s.d.metrics.fail(SourceDNS)
		if msg := err.Error(); msg != s.lastErr {
			s.lastErr = msg
			s.d.logger.Error("DNS lookup failed; keeping the last answer", "name", s.t.Name, "targets", len(s.last), "err", err)
		}
		if ts == nil {
			return s.last
		}
		// An SRV answer of which some hosts did not resolve: the rest is
		// news worth taking, the failed hosts kept their last targets.
	} else {
		if s.lastErr != "" {
			s.d.logger.Info("DNS lookup works again", "name", s.t.Name, "targets", len(ts))
		}
		s.lastErr = ""
		s.d.metrics.refreshed(SourceDNS, time.Now())
	}
	s.last = ts
	return ts
}

// lookupHost makes one target per address of an A/AAAA name, named
// name/address: the name groups them on dashboards, the address tells them
// apart, and there are no more of them than the answer has records.
func (s *dnsSource) lookupHost(ctx context.Context) ([]config.Target, error) {
	addrs, err := s.resolver.LookupHost(ctx, s.t.Name)
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(s.t.Port)
	ts := make([]config.Target, 0, len(addrs))
	for _, a := range addrs {
		ts = append(ts, s.target(a, net.JoinHostPort(a, port)))
	}
	return sortUnique(ts), nil
}

// lookupSRV makes one target per SRV record, named name/host:port after
// the record rather than an address, so that a host that moves keeps its
// series. Its address is the host's first address, IPv4 before IPv6,
// ordered so that it does not flip between answers.
func (s *dnsSource) lookupSRV(ctx context.Context) ([]config.Target, error) {
	// Empty service and proto look the name up as written.
	_, recs, err := s.resolver.LookupSRV(ctx, "", "", s.t.Name)
	if err != nil {
		return nil, err
	}
	type hostPort struct {
		host string
		port uint16
	}
	var want []hostPort
	for _, r := range recs {
		host := strings.TrimSuffix(r.Target, ".")
		// A target of "." says the service is not offered (RFC 2782).
		if host == "" || r.Port == 0 {
			continue
		}
		hp := hostPort{host, r.Port}
		if !slices.Contains(want, hp) {
			want = append(want, hp)
		}
	}

	ts := make([]*config.Target, len(want))
	errs := make([]error, len(want))
	sem := make(chan struct{}, maxHostLookups)
	var wg sync.WaitGroup
	for i, hp := range want {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			port := strconv.Itoa(int(hp.port))
			name := net.JoinHostPort(hp.host, port)
			addrs, err := s.resolver.LookupHost(ctx, hp.host)
			if err == nil && len(addrs) == 0 {
				err = errors.New("no addresses")
			}
			if err != nil {
				errs[i] = fmt.Errorf("SRV host %s: %w", hp.host, err)
				return
			}
			t := s.target(name, net.JoinHostPort(preferred(addrs), port))
			ts[i] = &t
		})
	}
	wg.Wait()

	out := make([]config.Target, 0, len(want))
	for i, t := range ts {
		if t != nil {
			out = append(out, *t)
			continue
		}
		// A host that did not resolve this time keeps its last target,
		// if it had one, rather than dropping out with a DNS hiccup.
		name := s.t.Name + "/" + net.JoinHostPort(want[i].host, strconv.Itoa(int(want[i].port)))
		if j := slices.IndexFunc(s.last, func(t config.Target) bool { return t.Name == name }); j >= 0 {
			out = append(out, s.last[j])
		}
	}
	return sortUnique(out), errors.Join(errs...)
}

func (s *dnsSource) target(suffix, address string) config.Target {
	return config.Target{Name: s.t.Name + "/" + suffix, Address: address, Module: s.t.Module, Device: s.t.Device, DevicePort: s.t.DevicePort}
}

// preferred picks one of a host's addresses the same way every time,
// whatever order the answer came in.
func preferred(addrs []string) string {
	sorted := slices.Clone(addrs)
	slices.SortFunc(sorted, func(a, b string) int {
		pa, ea := netip.ParseAddr(a)
		pb, eb := netip.ParseAddr(b)
		switch {
		case ea == nil && eb == nil:
			// IPv4 sorts before IPv6.
			return pa.Compare(pb)
		case ea == nil:
			return -1
		case eb == nil:
			return 1
		}
		return strings.Compare(a, b)
	})
	return sorted[0]
}

func sortUnique(ts []config.Target) []config.Target {
	slices.SortFunc(ts, func(a, b config.Target) int { return strings.Compare(a.Name, b.Name) })
	return slices.Compact(ts)
}
