package rdma

import (
	"context"
	"errors"
	"fmt"
)

// MulticastResult is one multicast run: what the sender sent to the
// group and what each receiver took from it.
type MulticastResult struct {
	Spec      Test                `json:"spec"`
	Sender    EndpointInfo        `json:"sender"`
	Sent      Direction           `json:"sent"`
	Receivers []MulticastReceiver `json:"receivers"`
}

// MulticastReceiver is one receiver's share: its device and what of the
// sender's messages arrived there.
type MulticastReceiver struct {
	Device   string   `json:"device"`
	Delivery Delivery `json:"delivery"`
}

// RunMulticast runs spec (UD send bandwidth, one QP) from sender to the
// group it joined, received by every endpoint of receivers, which joined
// it as receivers. The receivers start first; once the sender is done,
// each takes what is still arriving for loss_timeout and counts the rest
// as lost. A receiver that fails stops the run; one that receives
// nothing does not: its loss is the result.
func RunMulticast(ctx context.Context, spec Test, sender *Endpoint, receivers []*Endpoint) (*MulticastResult, error) {
	if err := spec.Ready(); err != nil {
		return nil, err
	}
	switch {
	case spec.QPType != UD || spec.Measure != MeasureBandwidth || spec.Op != OpSend:
		return nil, fmt.Errorf("rdma: multicast runs UD send bandwidth, not %s %s over %s", spec.Op, spec.Measure, spec.QPType)
	case spec.QPs != 1 || spec.Bidirectional:
		return nil, errors.New("rdma: multicast runs one QP, one way")
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
	res := &MulticastResult{Spec: spec, Sender: sender.Info()}
	for i, s := range rx {
		got, err := s.Result()
		errs = append(errs, err)
		if err == nil && txErr == nil {
			res.Receivers = append(res.Receivers, MulticastReceiver{Device: receivers[i].Info().Device,
				Delivery: *messageDelivery(sent.QPs[0].Completed, got, spec.Size)})
		}
	}
	if err := FirstError(errs...); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rdma: run stopped: %w", ctx.Err())
		}
		return nil, err
	}
	q := sent.QPs[0]
	res.Sent = newDirection(sender.Info().Device, "multicast", q.Completed, spec.Size, q.FirstPost, q.LastComp)
	return res, nil
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
