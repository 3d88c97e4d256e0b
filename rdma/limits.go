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
	case cqe > l.MaxCQE:
		return fmt.Errorf("rdma: a QP's completion queue needs %d entries (tx_depth %d + rx_depth or srq_depth %d + %d), and %s allows at most %d (max_cqe, ibv_devinfo -v); lower tx_depth or rx_depth", cqe, c.SQDepth, cqe-c.SQDepth-cqSlack, cqSlack, device, l.MaxCQE)
	}
	return nil
}

// cqSlack is the room each QP's CQ has beyond its two queues' depths.
const cqSlack = 16

// cqDepth is the entries of each QP's CQ: its send queue's and its
// receive queue's, or with a shared receive queue, as many receives as
// that queue holds, which may all complete on one QP.
func (c EndpointConfig) cqDepth() int {
	return c.SQDepth + max(c.RQDepth, c.SRQDepth) + cqSlack
}
