package runner

import (
	"fmt"

	"github.com/rdmarun/rdmarun/rdma"
)

// localDevices is a target whose devices are on this host, so that their
// limits can be read before the first run.
type localDevices interface {
	devices() []string
}

func (l *Loopback) devices() []string {
	if l.Peer.Device == l.Local.Device {
		return []string{l.Local.Device}
	}
	return []string{l.Local.Device, l.Peer.Device}
}

func (r *Remote) devices() []string { return []string{r.Local.Device} }

// checkDeviceLimits refuses a scenario one of whose runs asks this host's
// devices for more than they have (max_qp, max_cq, max_cqe, max_qp_wr,
// max_srq, max_srq_wr), before anything runs, naming the case's qps in
// the file: an hour-long sweep should not stop at its last size. A
// device that cannot be read is left to the runs, which say why.
func checkDeviceLimits(sc *Scenario, target Target) error {
	t, ok := target.(localDevices)
	if !ok {
		return nil
	}
	cases := map[string]*Case{}
	for i := range sc.Cases {
		cases[sc.Cases[i].Name] = &sc.Cases[i]
	}
	var errs ErrorList
	for _, dev := range t.devices() {
		limits, err := rdma.QueryLimits(dev)
		if err != nil {
			continue
		}
		said := map[string]bool{}
		for _, r := range sc.Runs() {
			c := cases[r.Case]
			if c == nil || said[r.Case] {
				continue
			}
			if err := limits.Refuses(dev, rdma.SpecConfig(r.Spec, rdma.EndpointConfig{Device: dev})); err != nil {
				said[r.Case] = true
				e := &Error{File: sc.File, Line: c.QPsLine, Column: c.QPsColumn, Msg: fmt.Sprintf("case %q (qps %d): %v", r.Case, r.Spec.QPs, err)}
				if sc.File == "" {
					// bench: the settings came from flags, which have no place.
					e.Line, e.Column = 0, 0
				}
				errs = append(errs, e)
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}
