package discovery

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/dnstargets"
	"github.com/rdmarun/rdmarun/exporter/config"
)

// dnsSource follows one DNS name.
type dnsSource struct {
	d       *Discoverer
	t       config.DNSTarget
	last    []config.Target // the last good answer, sorted by name
	lastErr string          // so that a lasting failure is logged once
}

func newDNSSource(d *Discoverer, t config.DNSTarget) *dnsSource {
	return &dnsSource{d: d, t: t}
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
	ts, err := s.lookup(lctx)
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

// lookup makes one target per address of an A/AAAA name, named
// name/address: the name groups them on dashboards, the address tells them
// apart, and there are no more of them than the answer has records. An
// SRV name makes one per record, named name/host:port after the record
// rather than an address, so that a host that moves keeps its series.
func (s *dnsSource) lookup(ctx context.Context) ([]config.Target, error) {
	found, err := dnstargets.Lookup(ctx, s.d.resolver, s.t.Name, s.t.Port)
	if found == nil {
		return nil, err
	}
	out := make([]config.Target, 0, len(found))
	for _, f := range found {
		if f.Err == nil {
			out = append(out, s.target(f.Host, f.Addr))
			continue
		}
		// A host that did not resolve this time keeps its last target,
		// if it had one, rather than dropping out with a DNS hiccup.
		name := s.t.Name + "/" + f.Host
		if j := slices.IndexFunc(s.last, func(t config.Target) bool { return t.Name == name }); j >= 0 {
			out = append(out, s.last[j])
		}
	}
	return sortUnique(out), err
}

func (s *dnsSource) target(suffix, address string) config.Target {
	return config.Target{Name: s.t.Name + "/" + suffix, Address: address, Module: s.t.Module, Device: s.t.Device, DevicePort: s.t.DevicePort}
}

func sortUnique(ts []config.Target) []config.Target {
	slices.SortFunc(ts, func(a, b config.Target) int { return strings.Compare(a.Name, b.Name) })
	return slices.Compact(ts)
}
