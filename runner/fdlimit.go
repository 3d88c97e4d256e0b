package runner

import "github.com/rdmarun/rdmarun/fleet"

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
// the coordinator checks its own limit at load.
const DefaultParallel = 512

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

