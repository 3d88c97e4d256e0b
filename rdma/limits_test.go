package rdma

import (
	"strings"
	"testing"
)

func TestDeviceLimits(t *testing.T) {
	rxe := DeviceLimits{MaxQP: 1024, MaxCQ: 1024, MaxCQE: 32767, MaxQPWR: 16384, MaxSRQ: 1024, MaxSRQWR: 32768}
	base := EndpointConfig{QPs: 64, SQDepth: 128, RQDepth: 512}
	for _, tc := range []struct {
		name  string
		edit  func(*EndpointConfig)
		extra int
		want  string
	}{
		{name: "fits", edit: func(*EndpointConfig) {}},
		{name: "at the QP limit", edit: func(c *EndpointConfig) { c.QPs = 1024 }},
		{name: "qps", edit: func(c *EndpointConfig) { c.QPs = 1025 }, want: "the test wants 1025 QPs, and rxe0 allows at most 1024 (max_qp"},
		{name: "cqs with a plug", edit: func(c *EndpointConfig) { c.QPs = 1024 }, extra: 1, want: "need 1025 completion queues, and rxe0 allows at most 1024 (max_cq"},
		{name: "tx_depth", edit: func(c *EndpointConfig) { c.SQDepth = 16385 }, want: "tx_depth 16385 is above rxe0's 16384 work requests per queue (max_qp_wr"},
		{name: "rx_depth", edit: func(c *EndpointConfig) { c.RQDepth = 20000 }, want: "rx_depth 20000 is above rxe0's 16384"},
		{name: "cqe", edit: func(c *EndpointConfig) { c.SQDepth, c.RQDepth = 16384, 16384 }, want: "needs 32784 entries (tx_depth 16384 + rx_depth 16384 + 16), and rxe0 allows at most 32767 (max_cqe"},
		// With a shared receive queue a QP's own CQ holds its sends only,
		// and each thread's receive CQ the whole queue: 1,024 QPs at
		// srq_depth 16,384 fit where one CQ per QP sized for it did not
		// fit in memory.
		{name: "srq, cqs of their sends", edit: func(c *EndpointConfig) { c.QPs, c.SRQDepth, c.RecvCQs = 1000, 16384, 2 }},
		{name: "srq, receive cqs counted", edit: func(c *EndpointConfig) { c.QPs, c.SRQDepth, c.RecvCQs = 1023, 512, 2 }, want: "need 1025 completion queues"},
		{name: "srq, receive cq entries", edit: func(c *EndpointConfig) { c.SRQDepth, c.RecvCQs = 32760, 1 }, want: "a thread's receive completion queue needs 32776 entries (srq_depth 32760 + 16), and rxe0 allows at most 32767 (max_cqe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			err := rxe.fits("rxe0", c, tc.extra)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("fits = %v, want %q", err, tc.want)
			}
		})
	}
}
