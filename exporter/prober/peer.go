package prober

import (
	"context"
	"log/slog"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// PeerTransport runs probes against remote responders with peer.Run,
// presenting token, each probe's steps logged to log at debug level.
func PeerTransport(token string, log *slog.Logger) Transport {
	return func(ctx context.Context, p Peer, spec rdma.Test) (*rdma.Result, error) {
		if p.Device == "" {
			return nil, rdma.ErrNoDevice
		}
		cc := peer.ClientConfig{Addr: p.Addr, Token: token, Device: p.Device, Port: p.Port, GIDIndex: rdma.AutoGIDIndex, StepTimeout: 5 * time.Second, Logger: log}
		if p.TLS != (ctrl.TLSConfig{}) {
			// Read at every probe, so renewed certificates take effect
			// without a reload; the files are small and probes are seconds
			// apart.
			tlsCfg, err := p.TLS.ClientConfig()
			if err != nil {
				return nil, err
			}
			cc.TLS = tlsCfg
		}
		return peer.Run(ctx, cc, spec)
	}
}
