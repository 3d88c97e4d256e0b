package rdma

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestEndpointConfigValidate(t *testing.T) {
	ok := EndpointConfig{Device: "rxe0", GIDIndex: AutoGIDIndex, MaxMessage: 4096, SQDepth: 16, RQDepth: 16, QPs: 1}
	for _, tc := range []struct {
		mod  func(*EndpointConfig)
		want string
	}{
		{func(c *EndpointConfig) {}, ""},
		{func(c *EndpointConfig) { c.Device = "" }, "endpoint: device is empty; name one (see `rdmarun devices`)"},
		{func(c *EndpointConfig) { c.Port = 300 }, "endpoint: port 300 out of range 1..255"},
		{func(c *EndpointConfig) { c.GIDIndex = -2 }, "endpoint: gid index -2 is negative; use an index from `rdmarun devices` or auto"},
		{func(c *EndpointConfig) { c.MaxMessage = 0 }, "endpoint: max message 0 bytes out of range 1..1 GiB"},
		{func(c *EndpointConfig) { c.SQDepth = 1 << 16 }, "endpoint: send queue depth 65536 out of range 1..32768"},
		// The depths come from the test (SpecConfig); an endpoint has no
		// defaults of its own to fall back on.
		{func(c *EndpointConfig) { c.RQDepth = 0 }, "endpoint: receive queue depth 0 out of range 1..32768"},
		{func(c *EndpointConfig) { c.QPs = 0 }, "endpoint: 0 QPs out of range 1..4096"},
	} {
		c := ok
		tc.mod(&c)
		err := c.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestQPAttrs(t *testing.T) {
	if err := (QPAttrs{}).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (QPAttrs{MTU: 1500}).Validate(); err == nil || err.Error() != "qp: MTU 1500 is not one of 256, 512, 1024, 2048, 4096" {
		t.Errorf("got %v", err)
	}
	if err := (QPAttrs{RetryCnt: 8}).Validate(); err == nil || err.Error() != "qp: retry_cnt 8 out of range 0..7" {
		t.Errorf("got %v", err)
	}
	m := QPSettings{RetryCnt: new(3), MTU: new(4096), SL: new(2)}.resolve()
	want := DefaultQPAttrs()
	want.RetryCnt, want.MTU, want.SL = 3, 4096, 2
	if m != want {
		t.Errorf("resolve = %+v, want %+v", m, want)
	}
	// 0 is a legal retry_cnt, timeout and rnr_retry: given, it is kept.
	zero := QPSettings{RetryCnt: new(0), Timeout: new(0), RNRRetry: new(0)}.resolve()
	if zero.RetryCnt != 0 || zero.Timeout != 0 || zero.RNRRetry != 0 || zero.HopLimit != 64 {
		t.Errorf("explicit zeros resolved to %+v", zero)
	}
	if back := want.Settings().resolve(); back != want {
		t.Errorf("Settings round trip = %+v, want %+v", back, want)
	}
}

func TestSpecDefaults(t *testing.T) {
	complete := func(s TestSpec) Test {
		t.Helper()
		c, err := s.Complete()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	lat := complete(TestSpec{Op: OpWrite})
	if lat.Size != 2 || lat.Iterations != 1000 || lat.Warmup != 100 || lat.QPs != 1 || lat.Threads != 1 ||
		lat.TxDepth != 16 || lat.CQModeration != 16 || lat.StallTimeout != Duration(5*time.Second) || lat.QP != DefaultQPAttrs() {
		t.Errorf("latency defaults: %+v", lat)
	}
	bw := complete(TestSpec{Op: OpWrite, Measure: MeasureBandwidth})
	if bw.Size != 65536 || bw.Iterations != 5000 || bw.Warmup != 0 || bw.TxDepth != 128 || bw.CQModeration != 100 {
		t.Errorf("bandwidth defaults: %+v", bw)
	}
	if a := complete(TestSpec{Op: OpFetchAdd}); a.Size != 8 {
		t.Errorf("atomic default size %d", a.Size)
	}
	if d := complete(TestSpec{Op: OpSend, Duration: Duration(time.Second)}); d.Iterations != 0 || d.Warmup != 0 {
		t.Errorf("duration run got iterations %d, warmup %d", d.Iterations, d.Warmup)
	}
}

func TestSpecCheck(t *testing.T) {
	for _, tc := range []struct {
		spec TestSpec
		want string
	}{
		{TestSpec{Op: OpWrite}, ""},
		{TestSpec{Op: OpRead, QPType: UC}, "op read needs a response from the target, and UC has none; use qp_type rc"},
		{TestSpec{Op: OpCmpSwap, QPType: UC}, "op cmp_swap needs a response from the target, and UC has none; use qp_type rc"},
		{TestSpec{Op: OpSend, QPType: UD}, ""},
		{TestSpec{Op: OpSendImm, QPType: UD, Measure: MeasureBandwidth, Mode: ModeEvent}, ""},
		{TestSpec{Op: OpWrite, QPType: UD}, "op write needs a connection to the target's memory, and UD has none (it sends datagrams to a receive queue); use op send or send_imm, or qp_type rc"},
		{TestSpec{Op: OpRead, QPType: UD}, "op read needs a connection to the target's memory, and UD has none (it sends datagrams to a receive queue); use op send or send_imm, or qp_type rc"},
		{TestSpec{Op: OpFetchAdd, QPType: UD}, "op fetch_add needs a connection to the target's memory, and UD has none (it sends datagrams to a receive queue); use op send or send_imm, or qp_type rc"},
		{TestSpec{Op: OpWriteImm, QPType: UD}, "op write_imm writes the target's memory, which UD cannot; use op send_imm"},
		{TestSpec{Op: OpSend, QPType: UD, Connect: ConnectCM}, "qp_type ud with connect: rdma_cm (an RDMA_PS_UDP id) is not built yet; use connect: exchange, which builds the address handles from the exchanged GIDs"},
		{TestSpec{Op: OpSend, QPType: UD, Size: 4097}, "size 4097 bytes: a UD message is one packet, at most the path MTU, and no port's MTU is above 4096 bytes; use a size of at most 4096 (the path MTU: qp_attrs.mtu_bytes, or the smaller of both ports' active MTU)"},
		{TestSpec{Op: OpSend, QPType: UD, Size: 2048, QP: QPSettings{MTU: new(1024)}}, "size 2048 bytes is above the path MTU 1024 bytes (qp_attrs.mtu_bytes): a UD message is one packet; use a size of at most 1024"},
		{TestSpec{Op: OpSend, QPType: UD, LossTimeout: Duration(-time.Second)}, "loss_timeout -1s must be positive"},
		{TestSpec{Op: OpSend, Measure: MeasureBandwidth, QPs: 64, SRQ: true}, ""},
		{TestSpec{Op: OpWriteImm, SRQ: true, SRQDepth: 8}, ""},
		{TestSpec{Op: OpWrite, SRQ: true}, "srq shares receive queues, and op write consumes no receives; use send, send_imm or write_imm, or drop srq"},
		{TestSpec{Op: OpRead, SRQ: true}, "srq shares receive queues, and op read consumes no receives; use send, send_imm or write_imm, or drop srq"},
		{TestSpec{Op: OpSend, SRQ: true, QPType: UD}, "srq with qp_type ud is not built yet; use rc or uc"},
		{TestSpec{Op: OpSend, SRQ: true, Validate: true}, "validate checks each QP's receive area, and with srq the QPs share one; drop validate or srq"},
		{TestSpec{Op: OpSend, SRQ: true, SRQDepth: 20000}, "srq_depth 20000 is outside 1..16384"},
		{TestSpec{Op: OpSend, QPType: UD, Measure: MeasureBandwidth, Multicast: "239.1.1.1"}, ""},
		{TestSpec{Op: OpSend, QPType: UD, Measure: MeasureBandwidth, Multicast: "ff15::1"}, ""},
		{TestSpec{Op: OpSend, QPType: UD, Measure: MeasureBandwidth, Multicast: "10.0.0.1"}, `multicast "10.0.0.1" is not a multicast address; use a group such as 239.1.1.1 (IPv4 224.0.0.0/4) or ff15::1 (IPv6 ff00::/8), or auto`},
		{TestSpec{Op: OpSend, QPType: UD, Measure: MeasureBandwidth, Multicast: "auto", Receivers: []string{"10.0.0.3"}}, ""},
		{TestSpec{Op: OpSend, QPType: UD, Measure: MeasureBandwidth, Receivers: []string{"10.0.0.3"}}, "receivers are the responders of a multicast test; add multicast: (a group, or auto), or drop receivers"},
		{TestSpec{Op: OpSend, Measure: MeasureBandwidth, Multicast: "239.1.1.1"}, "multicast sends datagrams to a group, which only UD QPs can; add qp_type: ud (not rc)"},
		{TestSpec{Op: OpSendImm, QPType: UD, Measure: MeasureBandwidth, Multicast: "239.1.1.1"}, "multicast sends to a group's receive queues; use op send, not send_imm"},
		{TestSpec{Op: OpSend, QPType: UD, Multicast: "239.1.1.1"}, "multicast has no round trip: one sender, many receivers; use measure bandwidth"},
		{TestSpec{Op: OpSend, QPType: UD, Measure: MeasureBandwidth, QPs: 2, Multicast: "239.1.1.1"}, "multicast sends from one QP (qps 2, threads 1); use qps 1"},
		{TestSpec{Op: OpSend, QPType: UD, Measure: MeasureBandwidth, Bidirectional: true, Multicast: "239.1.1.1"}, "multicast sends one way; drop bidirectional"},
		{TestSpec{Op: OpFetchAdd, Size: 16}, "op fetch_add works on one 8-byte word; size must be 8, not 16"},
		{TestSpec{Op: OpWrite, Mode: ModeEvent}, "op write, measure latency, mode event: an RDMA WRITE makes no completion at its target, so its arrival can only be seen by polling memory; use op write_imm for event mode"},
		{TestSpec{Op: OpWrite, Mode: ModeEvent, Measure: MeasureBandwidth}, ""},
		{TestSpec{Op: OpSend, Bidirectional: true}, "bidirectional applies to measure bandwidth only"},
		{TestSpec{Op: OpSend, QPs: 2, Threads: 3}, "threads 3: want 1..qps (2); each thread drives at least one QP"},
		{TestSpec{Op: OpSend, Measure: MeasureBandwidth, TxDepth: 10, CQModeration: 20}, "cq_moderation 20: want 1..tx_depth (10), or the send queue fills before a completion is asked for"},
		{TestSpec{Op: OpSend, Size: 2 << 30}, "size 2147483648 bytes is outside 1 B..1 GiB"},
		{TestSpec{Op: OpSend, Iterations: -1, Warmup: -2}, "iterations -1: want at least 1, or a duration; warmup -2 must not be negative"},
		{TestSpec{Op: OpSend, QP: QPSettings{MTU: new(1500)}}, "qp: MTU 1500 is not one of 256, 512, 1024, 2048, 4096"},
	} {
		_, err := tc.spec.Complete()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%+v:\n got %v\nwant %q", tc.spec, err, tc.want)
		}
	}
}

func TestSpecJSON(t *testing.T) {
	in, err := TestSpec{Op: OpCmpSwap, Measure: MeasureBandwidth, Mode: ModeEvent, Duration: Duration(1500 * time.Millisecond), QP: QPSettings{RetryCnt: new(0)}}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"op":"cmp_swap","measure":"bandwidth","mode":"event","qp_type":"rc"`) || !strings.Contains(string(b), `"duration":"1.5s"`) {
		t.Errorf("JSON %s", b)
	}
	if !strings.Contains(string(b), `"retry_cnt":0,`) || strings.Count(string(b), `"qp_attrs"`) != 1 {
		t.Errorf("JSON %s: want one qp_attrs with retry_cnt 0", b)
	}
	var out Test
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != in.String() || out.Ready() != nil || out.QP.RetryCnt != 0 {
		t.Errorf("round trip:\n%s\n%s", out, in)
	}
	var settings TestSpec
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	if again, err := settings.Complete(); err != nil || again.String() != in.String() {
		t.Errorf("completing a complete test again changed it: %v\n%s\n%s", err, again, in)
	}
	if err := (Test{}).Ready(); err != ErrIncomplete {
		t.Errorf("a literal Test: Ready = %v, want ErrIncomplete", err)
	}
	if err := json.Unmarshal([]byte(`{"op":"teleport"}`), &out); err == nil || !strings.Contains(err.Error(), `unknown op "teleport"; want one of send, send_imm, write, write_imm, read, fetch_add, cmp_swap`) {
		t.Errorf("bad op: %v", err)
	}
}

// TestDefaultModerationBound: the default CQ moderation is perftest's 100
// for small messages and at most 8 MiB of messages between signalled WRs
// for large ones, so a slow link hears from its CQ at least that often.
func TestDefaultModerationBound(t *testing.T) {
	for _, tc := range []struct {
		size, txDepth, want int
	}{
		{65536, 0, 100}, {1 << 20, 0, 8}, {8 << 20, 0, 1}, {16 << 20, 0, 1}, {4096, 4, 4}, {80 << 10, 0, 100}, {90 << 10, 0, 91},
	} {
		c, err := TestSpec{Measure: MeasureBandwidth, Size: tc.size, TxDepth: tc.txDepth}.Complete()
		if err != nil {
			t.Fatal(err)
		}
		if c.CQModeration != tc.want {
			t.Errorf("size %d tx_depth %d: cq_moderation %d, want %d", tc.size, c.TxDepth, c.CQModeration, tc.want)
		}
	}
}

// TestReadAckTimeout: a read run's default ACK timeout covers the read
// responses its QPs may be owed at once at 0.1 Gb/s, never below the
// default 17; a given timeout stands.
func TestReadAckTimeout(t *testing.T) {
	for _, tc := range []struct {
		spec TestSpec
		want int
	}{
		{TestSpec{Op: OpRead, Measure: MeasureBandwidth}, 17},
		{TestSpec{Op: OpRead, Measure: MeasureBandwidth, Size: 4 << 20, QPs: 4}, 19},
		{TestSpec{Op: OpRead, Measure: MeasureBandwidth, Size: 16 << 20, QPs: 4}, 21},
		{TestSpec{Op: OpRead, Measure: MeasureBandwidth, Size: 1 << 20, QP: QPSettings{MaxRdAtomic: new(2)}}, 17},
		{TestSpec{Op: OpRead, Measure: MeasureBandwidth, Size: 16 << 20, QPs: 4, QP: QPSettings{Timeout: new(12)}}, 12},
		{TestSpec{Op: OpWrite, Measure: MeasureBandwidth, Size: 16 << 20, QPs: 4}, 17},
	} {
		c, err := tc.spec.Complete()
		if err != nil {
			t.Fatal(err)
		}
		if c.QP.Timeout != tc.want {
			t.Errorf("%s: timeout %d, want %d", c, c.QP.Timeout, tc.want)
		}
	}
}
