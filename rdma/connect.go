package rdma

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Connect is how a test's QPs are connected to the peer's.
type Connect int

// The ways to connect.
const (
	// ConnectExchange swaps QPNs, PSNs and GIDs over the control
	// channel and moves the QPs to RTS directly, as perftest does
	// without -R.
	ConnectExchange Connect = iota
	// ConnectCM connects each QP through the RDMA connection manager
	// (librdmacm: resolve address, resolve route, connect, accept), as
	// storage and RPC applications do and perftest does with -R.
	ConnectCM
)

var connectNames = []string{"exchange", "rdma_cm"}

func (c Connect) String() string {
	if c >= 0 && int(c) < len(connectNames) {
		return connectNames[c]
	}
	return fmt.Sprintf("connect(%d)", int(c))
}

// ConnectNames lists the ways to connect as scenarios name them.
func ConnectNames() []string { return slices.Clone(connectNames) }

// ParseConnect reads "exchange" or "rdma_cm".
func ParseConnect(s string) (Connect, error) {
	i, err := parseName("connect", s, connectNames)
	return Connect(i), err
}

// MarshalText implements encoding.TextMarshaler.
func (c Connect) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Connect) UnmarshalText(b []byte) (err error) { *c, err = ParseConnect(string(b)); return }

// ConnectStats is how long a run's QPs took to connect through the CM,
// each step as the connecting side (the requester) timed it: a run
// connected by exchange has none. A kept session connects once, so only
// its first run carries them.
type ConnectStats struct {
	// Parallel is how many QPs were connecting at once, at most.
	Parallel int `json:"parallel"`
	// Elapsed runs from the first QP's address resolution to the last
	// QP's connection; PerSecond is the QPs connected per second of it.
	Elapsed   time.Duration `json:"elapsed_ns"`
	PerSecond float64       `json:"connections_per_second"`
	// QPs holds each QP's times, in QP order.
	QPs []CMTimes `json:"qps"`
	// The distributions over the QPs, nanoseconds.
	ResolveAddr  Summary `json:"resolve_addr"`
	ResolveRoute Summary `json:"resolve_route"`
	Connect      Summary `json:"connect"`
	Total        Summary `json:"total"`
}

// NewConnectStats summarises per-QP set-up times, which took elapsed
// with at most parallel QPs connecting at once; nil for none.
func NewConnectStats(qps []CMTimes, elapsed time.Duration, parallel int) *ConnectStats {
	if len(qps) == 0 {
		return nil
	}
	var rate float64
	if elapsed > 0 {
		rate = float64(len(qps)) / elapsed.Seconds()
	}
	pick := func(f func(CMTimes) time.Duration) Summary {
		v := make([]time.Duration, len(qps))
		for i, t := range qps {
			v[i] = f(t)
		}
		return summaryOfDurations(v)
	}
	return &ConnectStats{
		Parallel:     parallel,
		Elapsed:      elapsed,
		PerSecond:    rate,
		QPs:          slices.Clone(qps),
		ResolveAddr:  pick(func(t CMTimes) time.Duration { return t.ResolveAddr }),
		ResolveRoute: pick(func(t CMTimes) time.Duration { return t.ResolveRoute }),
		Connect:      pick(func(t CMTimes) time.Duration { return t.Connect }),
		Total:        pick(CMTimes.Total),
	}
}

// summaryOfDurations is the exact summary of a few values (one per QP),
// percentiles by nearest rank.
func summaryOfDurations(v []time.Duration) Summary {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	var sum, sumsq float64
	for _, d := range s {
		sum += float64(d)
		sumsq += float64(d) * float64(d)
	}
	mean := sum / float64(n)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(n))) - 1
		return float64(s[max(0, min(i, n-1))])
	}
	return Summary{
		Count: n, Min: float64(s[0]), Max: float64(s[n-1]), Mean: mean,
		Stddev: math.Sqrt(math.Max(sumsq/float64(n)-mean*mean, 0)),
		P50:    rank(50), P90: rank(90), P99: rank(99), P999: rank(99.9), P9999: rank(99.99),
	}
}
