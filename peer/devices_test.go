package peer

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/rdma"
)

// A device listing names the host's devices in its order, each with the
// state of the port the responder tests on, and runs no doctor.
func TestDevicesRequest(t *testing.T) {
	devs := []rdma.Device{
		{Name: "mlx5_1", Ports: []rdma.Port{{Num: 1, State: "ACTIVE", LinkLayer: "Ethernet", RateGbps: 100}}},
		{Name: "mlx5_0", Ports: []rdma.Port{{Num: 1, State: "DOWN", LinkLayer: "Ethernet"}}},
		{Name: "mlx5_2", Ports: []rdma.Port{{Num: 2, State: "ACTIVE"}}},
	}
	cfg := ServerConfig{Token: "fleet", Devices: func() ([]rdma.Device, error) { return devs, nil },
		DoctorEnv: func() doctor.Env { t.Error("a device listing ran the doctor"); return doctor.Env{} }}
	addr, _ := serve(t, "127.0.0.1", cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := Devices(ctx, ClientConfig{Addr: addr, Token: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	want := []FarDevice{{Name: "mlx5_1", State: "ACTIVE", LinkLayer: "Ethernet", RateGbps: 100}, {Name: "mlx5_0", State: "DOWN", LinkLayer: "Ethernet"}, {Name: "mlx5_2"}}
	if got.Addr != addr || got.Port != 1 || len(got.Devices) != len(want) {
		t.Fatalf("listing %+v, want port 1 and %+v", got, want)
	}
	for i := range want {
		if got.Devices[i] != want[i] {
			t.Errorf("device %d: %+v, want %+v", i, got.Devices[i], want[i])
		}
	}
	if !got.Devices[0].Active() || got.Devices[1].Active() || got.Devices[2].Active() {
		t.Errorf("active: %+v", got.Devices)
	}

	if _, err := Devices(ctx, ClientConfig{Addr: addr, Token: "other"}); !errors.Is(err, ctrl.ErrAuth) {
		t.Errorf("a wrong token: %v, want the token refused", err)
	}
	none, _ := serve(t, "127.0.0.1", ServerConfig{Token: "fleet", Devices: func() ([]rdma.Device, error) { return nil, nil }}, nil)
	if _, err := Devices(ctx, ClientConfig{Addr: none, Token: "fleet"}); err == nil || !strings.Contains(err.Error(), "has no RDMA device") {
		t.Errorf("a host without devices: %v", err)
	}
}

// A responder of a release before the listing answers the doctor request
// with its report and no devices: the asking end says to upgrade it.
func TestDevicesOlderResponder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
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
		// What an older build decodes: the fields it knows.
		var req struct {
			Device string `json:"device"`
		}
		if c.Recv(ctx, ctrl.KindDoctor, &req) != nil {
			return
		}
		_ = c.Send(ctx, ctrl.KindDoctorReport, map[string]any{"report": doctor.Report{Devices: []string{"mlx5_0"}}, "mtus": []any{}})
		_ = c.Recv(ctx, ctrl.KindBye, nil)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Devices(ctx, ClientConfig{Addr: ln.Addr().String(), Token: "fleet"})
	if err == nil || !strings.Contains(err.Error(), "answered without a device list, as a release older than the listing does; upgrade it") {
		t.Errorf("an older responder: %v", err)
	}
}
