package peer

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// fakeRelayer is a responder A that accepts one relay and answers it with
// answer as its relay-result payload, running nothing. It returns A's
// address and the relay request it read.
func fakeRelayer(t *testing.T, answer []byte) (string, <-chan relayMsg) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan relayMsg, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := ctrl.Server(ctx, nc, "fleet")
		if err != nil {
			return
		}
		defer c.Close()
		var req relayMsg
		if c.Recv(ctx, ctrl.KindRelay, &req) != nil {
			return
		}
		got <- req
		if c.Send(ctx, ctrl.KindRelayOK, relayOKMsg{Version: RelayVersion, Device: req.Device, Within: rdma.Duration(time.Minute)}) != nil {
			return
		}
		if c.Send(ctx, ctrl.KindRelayResult, json.RawMessage(answer)) != nil {
			return
		}
		_ = c.Recv(ctx, ctrl.KindBye, nil)
	}()
	return ln.Addr().String(), got
}

// A relayed result carries the rate of A's port, which is what a
// threshold's link_gbps means; one from an older A carries none and reads
// 0; a rate that is no rate is refused, not judged.
func TestRunViaLinkGbps(t *testing.T) {
	spec, err := rdma.TestSpec{Op: rdma.OpWrite, Measure: rdma.MeasureBandwidth, Iterations: 10}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	result := func(extra string) []byte {
		return []byte(`{"result":{"requester":{"device":"mlx5_0","port":1},"bandwidth":{"directions":[{"bytes_per_second":1e9}]}}` + extra + `}`)
	}
	for _, tc := range []struct {
		name   string
		answer []byte
		want   float64
		err    string
	}{
		{"carried", result(`,"link_gbps":100`), 100, ""},
		{"older responder", result(``), 0, ""},
		{"negative", result(`,"link_gbps":-5`), 0, "the relayed port rate -5 is not a rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, req := fakeRelayer(t, tc.answer)
			cfg := ClientConfig{Addr: addr, Token: "fleet", PeerDevice: "mlx5_0", StepTimeout: 2 * time.Second}
			got, err := RunVia(context.Background(), cfg, Remote{Addr: "10.0.0.2:18520"}, spec)
			if r := <-req; r.Device != "mlx5_0" || r.Peer.Addr != "10.0.0.2:18520" {
				t.Errorf("A was asked %+v", r)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("RunVia: %v, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.LinkGbps != tc.want || got.Result.Requester.Device != "mlx5_0" || got.Result.Bandwidth == nil {
				t.Errorf("relayed %+v, result %+v; want link %v and A's result", got, got.Result, tc.want)
			}
		})
	}
}

// The field is what older and newer builds of relay version 1 read: it
// may be added to, never renamed.
func TestRelayResultLinkEncoding(t *testing.T) {
	b, err := json.Marshal(relayResultMsg{Result: &rdma.Result{}, LinkGbps: 25})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"link_gbps":25`) {
		t.Errorf("%s lacks link_gbps", b)
	}
	if portRate("no-such-device", 0) != 0 || math.IsNaN(portRate("", 1)) {
		t.Error("an unknown device's rate must read 0")
	}
}
