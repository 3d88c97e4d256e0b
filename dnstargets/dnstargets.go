// Package dnstargets resolves a DNS name into the rdmarun serves it
// names: one per A/AAAA address, on a port the caller gives, or one per
// SRV record, on the record's port. The exporter follows such names; a
// fleet scenario resolves one once. It sits below both so that neither
// imports the other.
package dnstargets

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
)

// maxHostLookups bounds the SRV hosts resolved at once, so a large SRV
// answer does not open hundreds of sockets.
const maxHostLookups = 8

// Resolver is the part of *net.Resolver used here, so tests can answer
// without a DNS server.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// Target is one serve a name gives.
type Target struct {
	// Host tells the targets of one name apart: the address of an A/AAAA
	// answer, or an SRV record's HOST:PORT, named after the record rather
	// than an address so that a host that moves keeps its name.
	Host string
	// Addr is IP:PORT to dial; empty when Err is set.
	Addr string
	// Err is why an SRV record's host did not resolve.
	Err error
}

// IsSRV reports whether name is looked up as an SRV record: an
// _service._proto.domain name.
func IsSRV(name string) bool { return strings.HasPrefix(name, "_") }

// Lookup resolves name once. An SRV name gives a target per record (a
// record whose target is "." says the service is not offered, RFC 2782,
// and gives none), addressed at its host's first address, IPv4 before
// IPv6, so that it does not flip between answers; any other name gives a
// target per A/AAAA address on port. The targets are sorted by Host. An
// SRV record whose host did not resolve is a target with Err set, so a
// caller following the name can keep its last address, and the error
// returned joins those errors. ctx bounds the whole lookup.
func Lookup(ctx context.Context, r Resolver, name string, port int) ([]Target, error) {
	if IsSRV(name) {
		return lookupSRV(ctx, r, name)
	}
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	ts := make([]Target, 0, len(addrs))
	for _, a := range addrs {
		ts = append(ts, Target{Host: a, Addr: net.JoinHostPort(a, p)})
	}
	return sortUnique(ts), nil
}

func lookupSRV(ctx context.Context, r Resolver, name string) ([]Target, error) {
	// Empty service and proto look the name up as written.
	_, recs, err := r.LookupSRV(ctx, "", "", name)
	if err != nil {
		return nil, err
	}
	type hostPort struct {
		host string
		port uint16
	}
	var want []hostPort
	for _, rec := range recs {
		host := strings.TrimSuffix(rec.Target, ".")
		if host == "" || rec.Port == 0 {
			continue
		}
		hp := hostPort{host, rec.Port}
		if !slices.Contains(want, hp) {
			want = append(want, hp)
		}
	}

	ts := make([]Target, len(want))
	errs := make([]error, len(want))
	sem := make(chan struct{}, maxHostLookups)
	var wg sync.WaitGroup
	for i, hp := range want {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			port := strconv.Itoa(int(hp.port))
			ts[i].Host = net.JoinHostPort(hp.host, port)
			addrs, err := r.LookupHost(ctx, hp.host)
			if err == nil && len(addrs) == 0 {
				err = errors.New("no addresses")
			}
			if err != nil {
				errs[i] = fmt.Errorf("SRV host %s: %w", hp.host, err)
				ts[i].Err = errs[i]
				return
			}
			ts[i].Addr = net.JoinHostPort(preferred(addrs), port)
		})
	}
	wg.Wait()
	return sortUnique(ts), errors.Join(errs...)
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

func sortUnique(ts []Target) []Target {
	slices.SortFunc(ts, func(a, b Target) int { return strings.Compare(a.Host, b.Host) })
	return slices.CompactFunc(ts, func(a, b Target) bool { return a.Host == b.Host && a.Addr == b.Addr })
}
