package rdma

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// check reports every setting that cannot work, saying why.
func (s Test) check() error {
	if err := s.checkCombination(); err != nil {
		return err
	}
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if s.Size < 1 || s.Size > 1<<30 {
		add("size %d bytes is outside 1 B..1 GiB", s.Size)
	}
	if s.Iterations < 0 || (s.Iterations == 0 && s.Duration == 0) {
		add("iterations %d: want at least 1, or a duration", s.Iterations)
	}
	if s.Duration < 0 {
		add("duration %v must not be negative", time.Duration(s.Duration))
	}
	if s.Warmup < 0 {
		add("warmup %d must not be negative", s.Warmup)
	}
	if s.QPs < 1 || s.QPs > 4096 {
		add("qps %d is outside 1..4096", s.QPs)
	}
	if s.Connect == ConnectCM && (s.ConnectParallel < 1 || s.ConnectParallel > max(s.QPs, 1)) {
		add("connect_parallel %d: want 1..qps (%d), the QPs connecting through the CM at once", s.ConnectParallel, s.QPs)
	}
	if s.Threads < 1 || s.Threads > s.QPs {
		add("threads %d: want 1..qps (%d); each thread drives at least one QP", s.Threads, s.QPs)
	}
	for _, c := range s.CPUs {
		if c < 0 {
			add("cpu %d is negative", c)
		}
	}
	if s.TxDepth < 1 || s.TxDepth > 16384 {
		add("tx_depth %d is outside 1..16384", s.TxDepth)
	}
	if s.RxDepth < 1 || s.RxDepth > 16384 {
		add("rx_depth %d is outside 1..16384", s.RxDepth)
	}
	if s.SRQ && (s.SRQDepth < 1 || s.SRQDepth > 16384) {
		add("srq_depth %d is outside 1..16384", s.SRQDepth)
	}
	if s.CQModeration < 1 || s.CQModeration > s.TxDepth {
		add("cq_moderation %d: want 1..tx_depth (%d), or the send queue fills before a completion is asked for", s.CQModeration, s.TxDepth)
	}
	if s.PostList < 1 || s.PostList > s.TxDepth {
		add("post_list %d: want 1..tx_depth (%d)", s.PostList, s.TxDepth)
	}
	if s.Inline < 0 || s.Inline > 4096 {
		add("inline %d is outside 0..4096 bytes", s.Inline)
	}
	if s.StallTimeout <= 0 {
		add("stall_timeout %v must be positive", time.Duration(s.StallTimeout))
	}
	if s.QPType == UD && s.LossTimeout <= 0 {
		add("loss_timeout %v must be positive", time.Duration(s.LossTimeout))
	}
	if err := s.QP.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (s Test) checkCombination() error {
	if err := s.checkMulticast(); err != nil {
		return err
	}
	switch {
	case s.QPType == UD && !s.Op.UsesReceive():
		return fmt.Errorf("op %s needs a connection to the target's memory, and UD has none (it sends datagrams to a receive queue); use op send or send_imm, or qp_type rc", s.Op)
	case s.QPType == UD && s.Op == OpWriteImm:
		return fmt.Errorf("op %s writes the target's memory, which UD cannot; use op send_imm", s.Op)
	case s.SRQ && !s.Op.UsesReceive():
		return fmt.Errorf("srq shares receive queues, and op %s consumes no receives; use send, send_imm or write_imm, or drop srq", s.Op)
	case s.SRQ && s.QPType == UD:
		return errors.New("srq with qp_type ud is not built yet; use rc or uc")
	case s.SRQ && s.Validate:
		return errors.New("validate checks each QP's receive area, and with srq the QPs share one; drop validate or srq")
	case s.QPType == UD && s.Connect == ConnectCM:
		return errors.New("qp_type ud with connect: rdma_cm (an RDMA_PS_UDP id) is not built yet; use connect: exchange, which builds the address handles from the exchanged GIDs")
	case s.QPType == UD && s.Size > udMaxSize:
		return fmt.Errorf("size %d bytes: a UD message is one packet, at most the path MTU, and no port's MTU is above %d bytes; use a size of at most %d (the path MTU: qp_attrs.mtu_bytes, or the smaller of both ports' active MTU)", s.Size, udMaxSize, udMaxSize)
	case s.QPType == UD && s.QP.MTU != 0 && s.Size > s.QP.MTU:
		return fmt.Errorf("size %d bytes is above the path MTU %d bytes (qp_attrs.mtu_bytes): a UD message is one packet; use a size of at most %d", s.Size, s.QP.MTU, s.QP.MTU)
	case s.Connect != ConnectExchange && s.Connect != ConnectCM:
		return fmt.Errorf("connect %d is not a way to connect; want one of %s", int(s.Connect), strings.Join(connectNames, ", "))
	case s.Measure == MeasureConnect && s.Connect != ConnectCM:
		return errors.New("measure connect times connections through the CM; add connect: rdma_cm (connect: exchange swaps QP numbers over the control channel, which has no set-up to time)")
	case s.Measure == MeasureConnect && (s.Iterations != 1 || s.Duration != 0):
		return errors.New("measure connect connects the QPs once per run; iterations and duration do not apply (set qps for the connections, and repeat the case for more runs)")
	case s.QPType == UC && (s.Op == OpRead || s.Op.Atomic()):
		return fmt.Errorf("op %s needs a response from the target, and UC has none; use qp_type rc", s.Op)
	case s.Op.Atomic() && s.Size != 8:
		return fmt.Errorf("op %s works on one 8-byte word; size must be 8, not %d", s.Op, s.Size)
	case s.Measure == MeasureLatency && s.Mode == ModeEvent && s.Op == OpWrite:
		return errors.New("op write, measure latency, mode event: an RDMA WRITE makes no completion at its target, so its arrival can only be seen by polling memory; use op write_imm for event mode")
	case s.Bidirectional && s.Measure != MeasureBandwidth:
		return errors.New("bidirectional applies to measure bandwidth only")
	case s.Measure == MeasureLatency && s.Op.PingPong() && s.Size < 1:
		return errors.New("a ping-pong needs at least 1 byte")
	}
	return nil
}

// checkMulticast refuses a multicast test that is not one UD QP sending
// one way, each refusal naming the fix.
func (s Test) checkMulticast() error {
	if s.Multicast == "" {
		if len(s.Receivers) > 0 {
			return errors.New("receivers are the responders of a multicast test; add multicast: (a group, or auto), or drop receivers")
		}
		return nil
	}
	g, err := netip.ParseAddr(s.Multicast)
	switch {
	case s.Multicast != MulticastAuto && (err != nil || !g.IsMulticast()):
		return fmt.Errorf("multicast %q is not a multicast address; use a group such as 239.1.1.1 (IPv4 224.0.0.0/4) or ff15::1 (IPv6 ff00::/8), or auto", s.Multicast)
	case s.QPType != UD:
		return fmt.Errorf("multicast sends datagrams to a group, which only UD QPs can; add qp_type: ud (not %s)", s.QPType)
	case s.Op != OpSend:
		return fmt.Errorf("multicast sends to a group's receive queues; use op send, not %s", s.Op)
	case s.Measure != MeasureBandwidth:
		return errors.New("multicast has no round trip: one sender, many receivers; use measure bandwidth")
	case s.QPs != 1 || s.Threads != 1:
		return fmt.Errorf("multicast sends from one QP (qps %d, threads %d); use qps 1", s.QPs, s.Threads)
	case s.Bidirectional:
		return errors.New("multicast sends one way; drop bidirectional")
	case s.Connect != ConnectExchange:
		return errors.New("multicast joins its group through the CM whatever connect says; drop connect: rdma_cm")
	}
	return nil
}
