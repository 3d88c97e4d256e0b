package rdma

import "fmt"

// DeviceLimits are the device attributes (ibv_query_device) that bound
// what one endpoint may create.
type DeviceLimits struct {
	MaxQP    int // queue pairs
	MaxCQ    int // completion queues
	MaxCQE   int // entries per completion queue
	MaxQPWR  int // work requests per send or receive queue
	MaxSRQ   int // shared receive queues
	MaxSRQWR int // receives per shared receive queue
}

// fits reports the first limit of the device that c's endpoint would
// pass, naming the limit, the device's value and the setting that asks
// for more; nil when it fits. extraCQs are the CQs the endpoint makes
// beyond one per QP (siw.c's plug). The device's limits are for all its
// users together, so an endpoint that fits may still find another
// process holding what it needs; that failure is the driver's to name.
func (l DeviceLimits) fits(device string, c EndpointConfig, extraCQs int) error {
	cqe := c.cqDepth()
	extraCQs += c.RecvCQs
	switch {
	case c.QPs > l.MaxQP:
		return fmt.Errorf("rdma: the test wants %d QPs, and %s allows at most %d (max_qp, ibv_devinfo -v); use qps of at most %d", c.QPs, device, l.MaxQP, l.MaxQP)
	case c.QPs+extraCQs > l.MaxCQ:
		return fmt.Errorf("rdma: the test's %d QPs need %d completion queues, and %s allows at most %d (max_cq, ibv_devinfo -v); use fewer qps", c.QPs, c.QPs+extraCQs, device, l.MaxCQ)
	case c.SQDepth > l.MaxQPWR:
		return fmt.Errorf("rdma: tx_depth %d is above %s's %d work requests per queue (max_qp_wr, ibv_devinfo -v)", c.SQDepth, device, l.MaxQPWR)
	case c.RQDepth > l.MaxQPWR:
		return fmt.Errorf("rdma: rx_depth %d is above %s's %d work requests per queue (max_qp_wr, ibv_devinfo -v)", c.RQDepth, device, l.MaxQPWR)
	case c.SRQDepth > 0 && l.MaxSRQ < 1:
		return fmt.Errorf("rdma: %s has no shared receive queues (max_srq 0, ibv_devinfo -v); drop srq", device)
	case c.SRQDepth > l.MaxSRQWR:
		return fmt.Errorf("rdma: srq_depth %d is above %s's %d receives per shared receive queue (max_srq_wr, ibv_devinfo -v)", c.SRQDepth, device, l.MaxSRQWR)
	case c.SRQDepth > 0 && cqe > l.MaxCQE:
		return fmt.Errorf("rdma: a QP's completion queue needs %d entries (tx_depth %d + %d), and %s allows at most %d (max_cqe, ibv_devinfo -v); lower tx_depth", cqe, c.SQDepth, cqSlack, device, l.MaxCQE)
	case cqe > l.MaxCQE:
		return fmt.Errorf("rdma: a QP's completion queue needs %d entries (tx_depth %d + rx_depth %d + %d), and %s allows at most %d (max_cqe, ibv_devinfo -v); lower tx_depth or rx_depth", cqe, c.SQDepth, c.RQDepth, cqSlack, device, l.MaxCQE)
	case c.SRQDepth > 0 && c.recvCQDepth() > l.MaxCQE:
		return fmt.Errorf("rdma: a thread's receive completion queue needs %d entries (srq_depth %d + %d), and %s allows at most %d (max_cqe, ibv_devinfo -v); lower srq_depth", c.recvCQDepth(), c.SRQDepth, cqSlack, device, l.MaxCQE)
	}
	return nil
}

// Refuses is fits for a caller that has no endpoint yet: the limit of
// device that a test's endpoint config c would pass, or nil.
func (l DeviceLimits) Refuses(device string, c EndpointConfig) error {
	return l.fits(device, c, 0)
}

// cqSlack is the room each QP's CQ has beyond its two queues' depths.
const cqSlack = 16

// cqDepth is the entries of each QP's CQ: its send queue's and its
// receive queue's; with a shared receive queue its receives complete on
// the thread's receive CQ instead.
func (c EndpointConfig) cqDepth() int {
	if c.SRQDepth > 0 {
		return c.SQDepth + cqSlack
	}
	return c.SQDepth + c.RQDepth + cqSlack
}

// recvCQDepth is the entries of each receive CQ shared by a thread's QPs:
// as many as the shared receive queue holds, which may all complete on
// one thread's QPs.
func (c EndpointConfig) recvCQDepth() int {
	return c.SRQDepth + cqSlack
}
