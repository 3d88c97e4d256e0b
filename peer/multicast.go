package peer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// RunMulticast runs spec (UD send bandwidth to the group spec.Multicast
// names) from cfg's device to the responders at addrs: each joins the
// group and receives, and the result says what each one got. cfg.Addr
// is not used; every responder is dialled with cfg's token, TLS and
// responder settings. One sender endpoint serves all the sessions.
func RunMulticast(ctx context.Context, cfg ClientConfig, addrs []string, spec rdma.Test) (*rdma.Result, error) {
	if err := spec.Ready(); err != nil {
		return nil, err
	}
	if spec.Multicast == "" || len(addrs) == 0 {
		return nil, errors.New("peer: a multicast run needs a group (multicast) and at least one receiver")
	}
	spec = spec.WithGroup()
	step := cfg.step()
	ep, err := rdma.NewEndpoint(rdma.SpecConfig(spec, rdma.EndpointConfig{Device: cfg.Device, Port: cfg.Port, GIDIndex: cfg.GIDIndex, SkipPortCounters: cfg.SkipPortCounters}))
	if err != nil {
		return nil, err
	}
	defer ep.Close()
	if err := ep.JoinMulticast(netip.MustParseAddr(spec.Multicast), true, spec.QP, step); err != nil {
		return nil, err
	}
	var ss []*Session
	defer func() {
		for _, s := range ss {
			s.Close()
		}
	}()
	for _, a := range addrs {
		c := cfg
		c.Addr = a
		s, err := dial(ctx, c, spec, 0, ep)
		if err != nil {
			return nil, fmt.Errorf("multicast receiver %s: %w", a, err)
		}
		ss = append(ss, s)
	}
	side, err := ep.Prepare(spec, 0, rdma.RoleSend, ep.MulticastPeer())
	if err != nil {
		return nil, err
	}
	defer side.Close()
	// Every receiver's side runs before the first message is sent.
	for _, s := range ss {
		if err := s.send(ctx, StageStarting, ctrl.KindReady, nil); err != nil {
			return nil, err
		}
		if err := s.recv(ctx, StageStarting, ctrl.KindStart, nil); err != nil {
			return nil, err
		}
	}
	side.Start()
	conns, names := make([]*ctrl.Conn, len(ss)), make([]string, len(ss))
	for i, s := range ss {
		conns[i], names[i] = s.conn, s.addr
	}
	if err := relayAll(ctx, conns, names, side, step, spec.StallLimit()); err != nil {
		return nil, rdma.FirstError(sideErr(side), err)
	}
	sent, localErr := side.Result()
	if localErr != nil {
		return nil, localErr
	}
	var hosts []string
	var infos []rdma.EndpointInfo
	var got []*rdma.SideResult
	for _, s := range ss {
		rctx, cancel := context.WithTimeout(ctx, step+spec.StallLimit())
		var theirs resultMsg
		err := s.conn.Recv(rctx, ctrl.KindResult, &theirs)
		cancel()
		switch {
		case err != nil:
			return nil, fmt.Errorf("multicast receiver %s: %w", s.addr, s.wrap(StageAwaitResult, err))
		case theirs.Error != "":
			return nil, fmt.Errorf("multicast receiver %s: %w", s.addr, &RemoteSideError{Msg: theirs.Error, Timeout: theirs.Timeout})
		case theirs.Side == nil:
			return nil, fmt.Errorf("multicast receiver %s: %w", s.addr, s.wrap(StageResult, errors.New("no result and no error")))
		}
		s.bye(ctx)
		hosts, infos, got = append(hosts, s.addr), append(infos, s.peer), append(got, theirs.Side)
	}
	spec.QP = ep.Attrs()
	res := rdma.AssembleMulticast(spec, ep.Info(), sent, infos, got)
	for i := range res.Receivers {
		res.Receivers[i].Host = hosts[i]
	}
	return res, nil
}
