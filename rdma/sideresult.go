package rdma

import (
	"time"

	"github.com/rdmarun/rdmarun/portstats"
)

// QPCounts is what one QP of one side did. Times are that host's
// monotonic clock in nanoseconds: only differences on one side mean
// anything.
type QPCounts struct {
	Posted    uint64 `json:"posted"`
	Completed uint64 `json:"completed"`
	Received  uint64 `json:"received"`
	FirstPost int64  `json:"first_post_ns,omitempty"`
	LastComp  int64  `json:"last_completion_ns,omitempty"`
	FirstRecv int64  `json:"first_recv_ns,omitempty"`
	LastRecv  int64  `json:"last_recv_ns,omitempty"`
	// UD latency (requester): round trips whose answer did not come
	// within loss_timeout, and answers that came after it.
	TimedOut uint64 `json:"timed_out,omitempty"`
	Late     uint64 `json:"late,omitempty"`
}

// SideResult is one side's share of a result. A remote responder sends
// its SideResult back to the client.
type SideResult struct {
	Device   string           `json:"device"`
	Role     Role             `json:"role"`
	QPs      []QPCounts       `json:"qps"`
	Events   uint64           `json:"events,omitempty"`
	Begin    int64            `json:"begin_ns,omitempty"` // measured part, this host's clock
	End      int64            `json:"end_ns,omitempty"`
	CPU      CPUUse           `json:"cpu"`
	Counters portstats.Deltas `json:"counters"`
	// Silent: a UD latency requester ended early, no answer having come
	// for stall_timeout.
	Silent bool `json:"silent,omitempty"`
	// RegisteredBytes is the memory the side's endpoint registered.
	RegisteredBytes int64 `json:"registered_bytes,omitempty"`
	// SRQLimitReached counts the times the side's shared receive queue
	// fell below its limit (an eighth of srq_depth) during the run.
	SRQLimitReached int `json:"srq_limit_reached,omitempty"`
	// Latency samples stay on the requester's side.
	lat  moments
	hist []bucketCount
}

// CPUUse is the CPU time the process used while a side ran (all its
// threads: in loopback both sides share one process).
type CPUUse struct {
	UserNs int64 `json:"user_ns"`
	SysNs  int64 `json:"sys_ns"`
}

// SideSummary is what a result says about each side besides the traffic.
type SideSummary struct {
	Device string `json:"device"`
	CPU    CPUUse `json:"cpu"`
	// CPUPerOpNs is the CPU time per round trip (latency) or per message
	// sent and received (bandwidth).
	CPUPerOpNs float64          `json:"cpu_per_op_ns"`
	Counters   portstats.Deltas `json:"counters"`
	Events     uint64           `json:"events,omitempty"`
	// RegisteredBytes is the memory the side registered: its buffers,
	// with a shared receive queue one receive area for all QPs.
	RegisteredBytes int64 `json:"registered_bytes,omitempty"`
	// SRQLimitReached (srq): how often the side's shared receive queue
	// ran below an eighth of srq_depth; a starved queue shows here and in
	// the RNR NAKs of the counters.
	SRQLimitReached int `json:"srq_limit_reached,omitempty"`
}

// Assemble puts the two sides' shares together into the result.
func Assemble(spec Test, reqInfo, respInfo EndpointInfo, req, resp *SideResult) *Result {
	res := &Result{Spec: spec, Requester: reqInfo, Responder: respInfo, Events: req.Events + resp.Events}
	if spec.Measure == MeasureLatency {
		rtt := summaryOf(req.lat, req.hist)
		res.Latency = &LatencyStats{RTT: rtt, Buckets: bucketsOf(req.hist)}
		if spec.Op.OneWay() {
			half := rtt.Half()
			res.Latency.OneWay = &half
		}
		res.Elapsed = time.Duration(req.End - req.Begin)
		if spec.QPType == UD {
			res.Latency.Delivery = roundTripDelivery(req)
		}
	} else {
		bw := &BandwidthStats{PerQP: make([][]Direction, spec.QPs)}
		for _, s := range []struct {
			side     *SideResult
			from, to string
		}{{req, reqInfo.Device, respInfo.Device}, {resp, respInfo.Device, reqInfo.Device}} {
			if s.side.Role&RoleSend == 0 {
				continue
			}
			from, to := s.from, s.to
			if spec.Op == OpRead {
				from, to = to, from
			}
			var msgs uint64
			var first, last int64
			for i, q := range s.side.QPs {
				if i < spec.QPs {
					bw.PerQP[i] = append(bw.PerQP[i], newDirection(from, to, q.Completed, spec.Size, q.FirstPost, q.LastComp))
				}
				msgs += q.Completed
				if first == 0 || (q.FirstPost != 0 && q.FirstPost < first) {
					first = q.FirstPost
				}
				last = max(last, q.LastComp)
			}
			d := newDirection(from, to, msgs, spec.Size, first, last)
			if spec.QPType == UD {
				rx := resp
				if s.side == resp {
					rx = req
				}
				d.Delivery = messageDelivery(msgs, rx, spec.Size)
				for i := range bw.PerQP {
					if i < len(rx.QPs) && len(bw.PerQP[i]) > 0 {
						q := &bw.PerQP[i][len(bw.PerQP[i])-1]
						q.Delivery = messageDelivery(q.Messages, &SideResult{QPs: rx.QPs[i : i+1]}, spec.Size)
					}
				}
			}
			bw.Directions = append(bw.Directions, d)
			res.Elapsed = max(res.Elapsed, time.Duration(last-first))
		}
		res.Bandwidth = bw
	}
	for _, s := range []*SideResult{req, resp} {
		sum := summary(spec, s)
		if spec.Measure == MeasureLatency && req.lat.n > 0 {
			sum.CPUPerOpNs = float64(s.CPU.UserNs+s.CPU.SysNs) / float64(req.lat.n)
		}
		res.Sides = append(res.Sides, sum)
	}
	return res
}

// summary is what a result says of side s besides its traffic; the CPU
// per operation is per message the side sent or received (a latency
// run's is per round trip, which Assemble sets).
func summary(spec Test, s *SideResult) SideSummary {
	sum := SideSummary{Device: s.Device, CPU: s.CPU, Counters: s.Counters, Events: s.Events,
		RegisteredBytes: s.RegisteredBytes, SRQLimitReached: s.SRQLimitReached}
	var n uint64
	for _, q := range s.QPs {
		n += q.Completed + q.Received
	}
	if n > 0 && spec.Measure != MeasureLatency {
		sum.CPUPerOpNs = float64(s.CPU.UserNs+s.CPU.SysNs) / float64(n)
	}
	return sum
}

// roundTripDelivery is what a UD latency requester's round trips came to.
func roundTripDelivery(req *SideResult) *Delivery {
	d := &Delivery{Silent: req.Silent}
	var timedOut uint64
	for _, q := range req.QPs {
		d.Sent += q.Posted
		timedOut += q.TimedOut
		d.Late += q.Late
	}
	d.Received = d.Sent - min(timedOut, d.Sent)
	// A late answer is one timed-out round trip that was not lost after all.
	d.Lost = timedOut - min(d.Late, timedOut)
	d.ratio()
	return d
}

// messageDelivery compares the messages a UD sender completed with those
// rx received, and rx's receive rate.
func messageDelivery(sent uint64, rx *SideResult, size int) *Delivery {
	d := &Delivery{Sent: sent}
	var first, last int64
	for _, q := range rx.QPs {
		d.Received += q.Received
		if first == 0 || (q.FirstRecv != 0 && q.FirstRecv < first) {
			first = q.FirstRecv
		}
		last = max(last, q.LastRecv)
	}
	d.Lost = sent - min(d.Received, sent)
	if last > first && d.Received > 1 {
		// Between the first and the last arrival, Received-1 messages
		// arrived after the first one.
		d.ReceivedBytesPerSecond = float64((d.Received-1)*uint64(size)) / (float64(last-first) / 1e9)
	}
	d.ratio()
	return d
}
