package runner

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/rdmarun/rdmarun/fleet"
)

// DefaultParallel is how many pairs the coordinator runs at once when a
// scenario gives no parallel: (or 0). It bounds the coordinator only: the
// plan is not split by it, so the rounds, their report and every output
// are what an uncapped fleet's are, and a round larger than it runs its
// pairs this many at a time, the next starting as one ends.
//
// Why 512: a relay costs the coordinator one TCP control connection to
// host A (TLS rides on the same socket) and one goroutine, the pair's,
// which calls peer.RunVia (TestRelayCost measures both while a relay
// waits for A). While it dials, a host name with IPv4 and IPv6 addresses
// adds a second socket and two goroutines (net.Dialer's racing fallback);
// context.AfterFunc callbacks run only on cancellation. All-pairs puts
// each host in at most one pair a round, so N hosts hold N/2 relays: 512
// runs a 1,000-host round (500 pairs) whole, as before there was a
// default, and caps no all-pairs fleet of up to 1,025 hosts (nor rail
// over up to 1,024 NICs, 128 hosts of 8 rails). Beyond that (the largest
// all-pairs round the loader takes, about 1,450 hosts, has 724 pairs) it
// holds the coordinator to 512 relays: 544 open files, 1,056 while names
// race, well within the hard limits of current systemd (524,288) and
// container runtimes (1,048,576), to which Go raises the soft limit;
// checkOpenFiles says when a host's limit is lower.
const DefaultParallel = 512

// fdReserve is what the coordinator holds open beside its relays: stdin,
// stdout and stderr, the runtime's network poller (an epoll and an event
// descriptor), the runs file, the output being written, the token and TLS
// files while they are read, with room to spare.
const fdReserve = 32

// openFileLimit is the most files this process may open: RLIMIT_NOFILE's
// soft limit, which the Go runtime raised to the hard limit at start. An
// error means it cannot be known here, and nothing is checked. A variable
// so that tests set the limit.
var openFileLimit = readOpenFileLimit

// atOnce is the most pairs of fl that run at once: parallel:, or
// DefaultParallel when it gives none.
func (fl *Fleet) atOnce() int {
	if fl.Parallel > 0 {
		return fl.Parallel
	}
	return DefaultParallel
}

// roundAtOnce is how many of round's pairs run at once under limit. An
// incast round's senders run together whatever the limit, as incast
// measures many-to-one at once; the loader refuses a parallel: below one,
// so only the default is ever exceeded.
func roundAtOnce(round fleet.Round, limit int) int {
	if round.Kind == fleet.IncastRound {
		return len(round.Pairs)
	}
	return min(len(round.Pairs), limit)
}

// relaysAtOnce is the most relays any round of fl holds at once, and
// whether that many is the cap (rather than the rounds' own size). A
// confirmation's rounds are the bad pairs scheduled afresh, so they are
// bounded too: disjoint ones by one pair per two NICs, incast ones by
// their receiver's senders, which the first rounds already hold.
func relaysAtOnce(fl *Fleet) (n int, capped bool) {
	limit := fl.atOnce()
	incast := false
	for _, r := range fl.Rounds {
		n = max(n, roundAtOnce(r, limit))
		incast = incast || r.Kind == fleet.IncastRound
	}
	if fl.Confirm > 0 && !incast {
		nics := len(fl.Hosts)
		if fl.Pattern == fleet.Rail {
			nics = 0
			for _, h := range fl.Hosts {
				nics += max(1, len(h.Devices))
			}
		}
		n = max(n, min(limit, nics/2, len(fl.Pairs)))
	}
	return n, !incast && n == limit
}

// fdsPerRelay is the sockets one relay may hold: one, or two while a host
// name's IPv4 and IPv6 addresses race. An address written as an IP has
// one family, so no race.
func fdsPerRelay(hosts []fleet.Host) int {
	for _, h := range hosts {
		host, _, err := net.SplitHostPort(h.DialAddr())
		if err != nil {
			return 2
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return 2
		}
	}
	return 1
}

// fdNeed is how many files the coordinator may hold open at once running
// fl: its connections, each fdsPerRelay sockets, and its own. The
// connections are its relays, or the dials of the wait for the hosts and
// of devices: auto (waitParallel at a time) when those are more.
func fdNeed(fl *Fleet) (need, conns, relays, per int, capped bool) {
	relays, capped = relaysAtOnce(fl)
	per = fdsPerRelay(fl.Hosts)
	conns = max(relays, min(waitParallel, len(fl.Hosts)))
	return conns*per + fdReserve, conns, relays, per, capped
}

// checkOpenFiles refuses a fleet whose rounds need more open files than
// this process may open: past the limit every dial fails with "too many
// open files", which would read as hosts that cannot be reached. The
// message says what the need is made of and both fixes; "" when the
// fleet fits or the limit cannot be read. given says the scenario wrote
// parallel:.
func checkOpenFiles(fl *Fleet, given bool) string {
	limit, err := openFileLimit()
	if err != nil || len(fl.Rounds) == 0 {
		return ""
	}
	need, conns, relays, per, capped := fdNeed(fl)
	if uint64(need) <= limit {
		return ""
	}
	var what string
	switch {
	case conns > relays:
		what = fmt.Sprintf("the %d dials to the hosts", conns)
	case capped && given:
		what = fmt.Sprintf("parallel: %d pairs", relays)
	case capped:
		what = fmt.Sprintf("%d pairs (the default parallel)", relays)
	case fl.Pattern == fleet.Incast:
		what = fmt.Sprintf("an incast round's %d senders", relays)
	default:
		what = fmt.Sprintf("the largest round's %d pairs", relays)
	}
	each := "one socket each"
	if per == 2 {
		each = "two sockets each while a host name's IPv4 and IPv6 addresses race"
	}
	msg := fmt.Sprintf("%s at once need up to %d open files (%d connections, %s, and %d of the coordinator's own), and this process may open %d (RLIMIT_NOFILE); raise the limit with `ulimit -n %d` before rdmarun (up to the hard limit, `ulimit -Hn`, unless root)",
		what, need, conns, each, fdReserve, limit, need)
	// Lowering parallel helps unless an incast round or the dials are
	// what need the files.
	fit := (int(limit) - fdReserve) / per
	switch {
	case fl.Pattern == fleet.Incast:
		msg += "; parallel: cannot split an incast round"
	case fit < 1 || fit < min(waitParallel, len(fl.Hosts)):
	case given:
		msg += fmt.Sprintf(", or lower parallel: to %d", fit)
	default:
		msg += fmt.Sprintf(", or write parallel: %d", fit)
	}
	return msg
}
