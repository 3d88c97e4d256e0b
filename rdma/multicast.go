package rdma

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// MulticastAuto as a test's Multicast draws a group for each run
// (WithGroup), so that runs at once, or one after another, do not hear
// each other's messages.
const MulticastAuto = "auto"

// WithGroup is t with a group drawn from 239.255.0.0/16, the IPv4
// organization-local scope, in place of MulticastAuto.
func (t Test) WithGroup() Test {
	if t.Multicast == MulticastAuto {
		n := rand.Uint32()
		t.Multicast = netip.AddrFrom4([4]byte{239, 255, byte(n >> 8), byte(n)}).String()
	}
	return t
}

// MulticastReceiver is one receiver's share: its device and what of the
// sender's messages arrived there.
type MulticastReceiver struct {
	// Host is the responder's address when the receiver is remote.
	Host     string   `json:"host,omitempty"`
	Device   string   `json:"device"`
	Delivery Delivery `json:"delivery"`
}

// RunMulticast runs spec (UD send bandwidth, one QP, to the group
// spec.Multicast names) from sender, which joined the group to send, received by every endpoint of receivers, which joined
// it as receivers. The receivers start first; once the sender is done,
// each takes what is still arriving for loss_timeout and counts the rest
// as lost. A receiver that fails stops the run; one that receives
// nothing does not: its loss is the result.
func RunMulticast(ctx context.Context, spec Test, sender *Endpoint, receivers []*Endpoint) (*Result, error) {
	if err := spec.Ready(); err != nil {
		return nil, err
	}
	switch {
	case spec.Multicast == "" || spec.Multicast == MulticastAuto:
		return nil, errors.New("rdma: a multicast run's spec names no group (multicast; WithGroup draws one for auto)")
	case len(receivers) == 0:
		return nil, errors.New("rdma: a multicast run needs at least one receiver")
	}
	var rx []*SideRun
	defer func() {
		for _, s := range rx {
			s.Close()
		}
	}()
	for _, r := range receivers {
		s, err := r.Prepare(spec, 1, RoleRecv, sender.Info())
		if err != nil {
			return nil, err
		}
		rx = append(rx, s)
	}
	tx, err := sender.Prepare(spec, 0, RoleSend, sender.MulticastPeer())
	if err != nil {
		return nil, err
	}
	defer tx.Close()
	for _, s := range rx {
		s.Start()
	}
	tx.Start()
	fanOut(ctx, tx, rx)
	sent, txErr := tx.Result()
	errs := []error{txErr}
	var got []*SideResult
	var infos []EndpointInfo
	for i, s := range rx {
		r, err := s.Result()
		errs = append(errs, err)
		got, infos = append(got, r), append(infos, receivers[i].Info())
	}
	if err := FirstError(errs...); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rdma: run stopped: %w", ctx.Err())
		}
		return nil, err
	}
	spec.QP = sender.Attrs()
	return AssembleMulticast(spec, sender.Info(), sent, infos, got), nil
}

// AssembleMulticast puts a multicast run together: the sender's share
// and each receiver's, receivers[i] being the endpoint of got[i].
func AssembleMulticast(spec Test, sender EndpointInfo, sent *SideResult, receivers []EndpointInfo, got []*SideResult) *Result {
	var q QPCounts
	if len(sent.QPs) > 0 {
		q = sent.QPs[0]
	}
	d := newDirection(sender.Device, spec.Multicast, q.Completed, spec.Size, q.FirstPost, q.LastComp)
	res := &Result{Spec: spec, Requester: sender, Elapsed: time.Duration(q.LastComp - q.FirstPost)}
	res.Sides = append(res.Sides, summary(spec, sent))
	for i, r := range got {
		rx := MulticastReceiver{Device: receivers[i].Device, Delivery: *messageDelivery(q.Completed, r, spec.Size)}
		if d.Delivery == nil || rx.Delivery.Lost > d.Delivery.Lost {
			worst := rx.Delivery
			d.Delivery = &worst
		}
		res.Receivers = append(res.Receivers, rx)
		res.Sides = append(res.Sides, summary(spec, r))
	}
	if len(got) > 0 {
		res.Responder = receivers[0]
	}
	res.Bandwidth = &BandwidthStats{Directions: []Direction{d}, PerQP: [][]Direction{{d}}}
	return res
}

// fanOut is link for one sender and many receivers: the sender's "done"
// reaches every receiver, and a failure or ctx's end stops them all. It
// returns when every side has exited.
func fanOut(ctx context.Context, tx *SideRun, rx []*SideRun) {
	stopAll := func() {
		tx.Stop()
		for _, s := range rx {
			s.Stop()
		}
	}
	finished := func() {
		for _, s := range rx {
			s.MarkPeerFinished()
		}
	}
	sent, txEnd := tx.SendersFinished(), tx.Exited()
	stop := ctx.Done()
	for txEnd != nil {
		select {
		case <-stop:
			stopAll()
			stop = nil
		case <-sent:
			finished()
			sent = nil
		case <-txEnd:
			finished()
			if tx.Failed() {
				stopAll()
			}
			txEnd, sent = nil, nil
		}
	}
	for _, s := range rx {
		select {
		case <-s.Exited():
		case <-stop:
			stopAll()
			<-s.Exited()
		}
		if s.Failed() {
			stopAll()
		}
	}
}
