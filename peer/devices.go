package peer

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmarun/rdmarun/rdma"
)

// A device listing rides on the doctor request: doctorMsg.List asks for
// the host's RDMA devices alone, and the answer carries them in
// doctorReportMsg.Devices. A responder of a release before the listing
// ignores the field and answers with its doctor's report and no
// devices, which the asking end tells apart and explains; no new message
// kind, so the control protocol stays as it is.

// FarDevice is one RDMA device of a responder's host, with the state of
// the port the responder tests on.
type FarDevice struct {
	Name string `json:"name"`
	// State is the port's (ACTIVE, DOWN, ...); empty when the device has
	// no such port.
	State     string  `json:"state,omitempty"`
	LinkLayer string  `json:"link_layer,omitempty"`
	RateGbps  float64 `json:"rate_gbps,omitempty"`
}

// Active reports whether the port can carry a test.
func (d FarDevice) Active() bool { return d.State == "ACTIVE" }

// FarDevices is a responder's answer to Devices.
type FarDevices struct {
	Addr string // the responder asked, host:port
	// Port is the port the responder tests on (rdmarun serve --port),
	// the one each device's State is of.
	Port    int         `json:"port"`
	Devices []FarDevice `json:"devices"`
}

// Devices asks the responder at cfg.Addr for its host's RDMA devices, in
// the order the host lists them, each with the state of the port the
// responder tests on: what a fleet's devices: auto is made of. Token and
// TLS are cfg's, as for a test; no RDMA runs.
func Devices(ctx context.Context, cfg ClientConfig) (*FarDevices, error) {
	ans, addr, err := askDoctor(ctx, cfg, doctorMsg{List: true})
	if err != nil {
		return nil, err
	}
	if ans.Devices == nil {
		return nil, &Error{Addr: addr, Stage: StageDoctor, Err: fmt.Errorf(
			"the responder at %s answered without a device list, as a release older than the listing does; upgrade it, or list its devices in the scenario", addr)}
	}
	out := *ans.Devices
	out.Addr = addr
	return &out, nil
}

// deviceList is this host's devices for a listing, with the state of
// the responder's port on each.
func (s *Server) deviceList() (*FarDevices, error) {
	list := s.cfg.Devices
	if list == nil {
		list = rdma.Devices
	}
	devs, err := list()
	if err != nil {
		return nil, fmt.Errorf("listing the RDMA devices: %w", err)
	}
	if len(devs) == 0 {
		return nil, errors.New("this responder's host has no RDMA device")
	}
	out := &FarDevices{Port: s.cfg.Port, Devices: []FarDevice{}}
	for i := range devs {
		d := FarDevice{Name: devs[i].Name}
		if p, err := devs[i].Port(s.cfg.Port); err == nil {
			d.State, d.LinkLayer, d.RateGbps = p.State, p.LinkLayer, p.RateGbps
		}
		out.Devices = append(out.Devices, d)
	}
	return out, nil
}
