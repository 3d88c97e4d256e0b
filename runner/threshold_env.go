package runner

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/rdmarun/rdmarun/portstats"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// retryCounters are the counters that move when the transport
// retransmits or a receiver was not ready: rxe's names, then mlx5's.
var retryCounters = []string{
	"completer_retry_err", "rcvd_seq_err", "out_of_seq_request", "duplicate_request",
	"retry_exceeded_err", "retry_rnr_exceeded_err", "rcvd_rnr_err", "send_rnr_err",
	"local_ack_timeout_err", "packet_seq_err", "out_of_sequence", "implied_nak_seq_err",
	"rnr_nak_retry_err",
}

// NewEnv fills an Env from a finished run. linkGbps is the port's rate,
// which the result does not hold.
func NewEnv(res *rdma.Result, linkGbps float64) Env {
	e := Env{LinkGbps: linkGbps, Counter: noCounters}
	if res == nil {
		e.addCategories(nil, nil)
		return e
	}
	e.Size, e.QPs = res.Spec.Size, res.Spec.QPs
	e.Mode, e.Op = res.Spec.Mode.String(), res.Spec.Op.String()
	if l := res.Latency; l != nil {
		us := func(ns float64) float64 { return ns / 1e3 }
		r := l.RTT
		e.Min, e.Max, e.Mean, e.Stddev = us(r.Min), us(r.Max), us(r.Mean), us(r.Stddev)
		e.P50, e.P90, e.P99, e.P999, e.P9999 = us(r.P50), us(r.P90), us(r.P99), us(r.P999), us(r.P9999)
		if o := l.OneWay; o != nil {
			e.OneWayP50, e.OneWayP99 = us(o.P50), us(o.P99)
		}
	}
	if c := res.Connect; c != nil && len(c.QPs) > 0 {
		us := func(ns float64) float64 { return ns / 1e3 }
		e.hasSetup = true
		e.ResolveAddrP50, e.ResolveAddrP99, e.ResolveAddrMax = us(c.ResolveAddr.P50), us(c.ResolveAddr.P99), us(c.ResolveAddr.Max)
		e.ResolveRouteP50, e.ResolveRouteP99, e.ResolveRouteMax = us(c.ResolveRoute.P50), us(c.ResolveRoute.P99), us(c.ResolveRoute.Max)
		e.ConnectP50, e.ConnectP99, e.ConnectMax = us(c.Connect.P50), us(c.Connect.P99), us(c.Connect.Max)
		e.SetupP50, e.SetupP99, e.SetupMax = us(c.Total.P50), us(c.Total.P99), us(c.Total.Max)
		e.ConnectRate = c.PerSecond
	}
	if b := res.Bandwidth; b != nil {
		for _, d := range b.Directions {
			e.BwGbps += d.Gbps()
			e.BwGiB += d.GiBps()
			e.MsgRate += d.MessagesPerSec
			if d.Delivery != nil {
				e.addDelivery(d.Delivery)
				e.RxGbps += d.Delivery.ReceivedGbps()
			}
		}
	}
	if res.Latency != nil && res.Latency.Delivery != nil {
		e.addDelivery(res.Latency.Delivery)
	}
	if e.Sent > 0 {
		e.LossRatio = float64(e.Lost) / float64(e.Sent)
	}
	sides := countedSides(res)
	for _, name := range retryCounters {
		v, _ := counterSum(sides, name)
		e.Retries = addClamped(e.Retries, uint64(v))
	}
	e.addCategories(res, sides)
	if len(sides) > 0 {
		e.Counter = func(name string) (int, error) {
			v, ok := counterSum(sides, name)
			if !ok {
				return 0, fmt.Errorf("counter(%q): no such counter on either side's port (see counters/ and hw_counters/ under /sys/class/infiniband/DEVICE/ports/PORT, and ethtool/ for the netdev's pause statistics)", name)
			}
			return v, nil
		}
	}
	return e
}

// addDelivery adds a UD direction's (or latency run's) counts to e.
func (e *Env) addDelivery(d *rdma.Delivery) {
	e.hasDelivery = true
	e.Sent = addClamped(e.Sent, d.Sent)
	e.Received = addClamped(e.Received, d.Received)
	e.Lost = addClamped(e.Lost, d.Lost)
	e.Late = addClamped(e.Late, d.Late)
}

// addCategories sums the sides' categories into e, and records in
// e.unreported why each category some side lacks cannot be judged.
func (e *Env) addCategories(res *rdma.Result, sides []rdma.SideSummary) {
	e.unreported = map[string]error{}
	ints := map[string]*int{
		portstats.Retransmits: &e.Retransmits, portstats.SeqErrors: &e.SeqErrors,
		portstats.CNPSent: &e.CNPSent, portstats.CNPHandled: &e.CNPHandled, portstats.ECNMarked: &e.ECNMarked,
		portstats.PauseRx: &e.PauseRx, portstats.PauseTx: &e.PauseTx,
	}
	floats := map[string]*float64{portstats.PauseRxUs: &e.PauseRxUs, portstats.PauseTxUs: &e.PauseTxUs}
	for _, cat := range portstats.CategoryNames {
		if len(sides) == 0 {
			e.unreported[cat] = fmt.Errorf("%s: this run recorded no port counters", cat)
			continue
		}
		var why []string
		for i, side := range sides {
			c := side.Counters.Categories
			if !c.Reported(cat) {
				why = append(why, fmt.Sprintf("not reported by the %s (%s): %s", report.SideRole(res, i), sideDevice(res, i, side), c.Why(cat)))
				continue
			}
			v := c.Values[cat]
			if p, ok := ints[cat]; ok {
				*p = addClamped(*p, v)
			} else {
				*floats[cat] += float64(v)
			}
		}
		if len(why) > 0 {
			e.unreported[cat] = fmt.Errorf("%s: %s", cat, strings.Join(why, "; "))
		}
	}
}

// sideDevice names the device of side i, from the endpoint when the side
// did not say.
func sideDevice(res *rdma.Result, i int, side rdma.SideSummary) string {
	if side.Device != "" {
		return side.Device
	}
	if res != nil && i == 0 {
		return res.Requester.Device
	}
	if res != nil && i == 1 {
		return res.Responder.Device
	}
	return "unknown device"
}

// countedSides returns the sides whose counters add up: when both ends of
// a loopback run share one port, its counters saw both ends' traffic
// already, and adding them twice would double every delta.
func countedSides(res *rdma.Result) []rdma.SideSummary {
	s := res.Sides
	rq, rs := res.Requester, res.Responder
	if len(s) == 2 && rq.Device != "" && rq.Device == rs.Device && rq.Port == rs.Port &&
		len(rq.GID) > 0 && bytes.Equal(rq.GID, rs.GID) {
		return s[:1]
	}
	return s
}

// counterSum adds a counter's deltas over the sides; found reports
// whether any side has it.
func counterSum(sides []rdma.SideSummary, name string) (sum int, found bool) {
	dir, base, hasDir := strings.Cut(name, "/")
	if !hasDir {
		base = name
	}
	for _, side := range sides {
		for _, m := range []struct {
			dir string
			m   map[string]uint64
		}{{"counters", side.Counters.Counters}, {"hw_counters", side.Counters.HWCounters}, {"ethtool", side.Counters.Ethtool}} {
			// The netdev's statistics are not the port's: a bare name
			// stays with the port's directories, as it always has.
			if hasDir && dir != m.dir || !hasDir && m.dir == "ethtool" {
				continue
			}
			if v, ok := m.m[base]; ok {
				found = true
				sum = addClamped(sum, v)
			}
		}
	}
	return sum, found
}

func addClamped(a int, b uint64) int {
	if b > uint64(math.MaxInt-a) {
		return math.MaxInt
	}
	return a + int(b)
}
