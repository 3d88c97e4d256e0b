package doctor

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/rdma"
)

func roceDevice(name, ip string) rdma.Device {
	return rdma.Device{Name: name, Transport: rdma.TransportRoCE, Ports: []rdma.Port{{
		Num: 1, State: "ACTIVE", LinkLayer: "Ethernet",
		GIDs: []rdma.GID{
			{Index: 0, GID: rdma.GIDAddr(net.ParseIP("fe80::1")), Type: rdma.GIDTypeRoCEv2},
			{Index: 1, GID: rdma.GIDAddr(net.ParseIP(ip).To16()), Type: rdma.GIDTypeRoCEv2},
		},
	}}}
}

// TestCMOf: a far end tells its device's CM address and GID, or why it
// cannot.
func TestCMOf(t *testing.T) {
	env := Env{Device: "rxe0", Verbs: []rdma.Device{roceDevice("rxe0", "10.0.0.1")}}
	got := CMOf(env, Report{Devices: []string{"rxe0"}})
	want := FarCM{Device: "rxe0", Port: 1, Transport: rdma.TransportRoCE, Addr: "10.0.0.1", GID: "::ffff:10.0.0.1", GIDIndex: 1}
	if got == nil || *got != want {
		t.Errorf("CMOf = %+v, want %+v", got, want)
	}
	if f := CMOf(Env{}, Report{Devices: []string{"mlx5_0"}}); f == nil || f.Device != "mlx5_0" || !strings.Contains(f.Error, "no verbs listing") {
		t.Errorf("without a verbs listing: %+v, want the device and why not", f)
	}
	if f := CMOf(Env{}, Report{}); f != nil {
		t.Errorf("no device: %+v, want nil", f)
	}
}

// TestPeerCM: every outcome of cm.peer, with the CM's answers faked
// (the real ones: TestDoctorVMPeerCM).
func TestPeerCM(t *testing.T) {
	env := Env{Device: "rxe1", Verbs: []rdma.Device{roceDevice("rxe0", "10.0.0.1"), roceDevice("rxe1", "10.0.0.2")}}
	far := &FarCM{Device: "rxe0", Port: 1, Transport: rdma.TransportRoCE, Addr: "10.0.0.1", GID: "::ffff:10.0.0.1", GIDIndex: 1}
	resolved := func(dev, dgid string) CMResolver {
		return func(src, dst netip.Addr, timeout time.Duration) (rdma.CMRoute, error) {
			if src.String() != "10.0.0.2" || dst.String() != "10.0.0.1" || timeout <= 0 {
				t.Errorf("resolved %v -> %v within %v, want 10.0.0.2 -> 10.0.0.1", src, dst, timeout)
			}
			return rdma.CMRoute{Src: src, Dst: dst, Device: dev, Port: 1,
				SGID: rdma.GIDAddr(net.ParseIP("10.0.0.2").To16()), DGID: rdma.GIDAddr(net.ParseIP(dgid).To16()),
				ResolveAddr: 1200 * time.Microsecond, ResolveRoute: 300 * time.Microsecond}, nil
		}
	}
	failed := func(src, dst netip.Addr, _ time.Duration) (rdma.CMRoute, error) {
		return rdma.CMRoute{}, &rdma.CMError{Step: "resolve_addr", Peer: dst.String(), QP: -1, Event: rdma.CMAddrError, Status: -110}
	}
	unused := func(netip.Addr, netip.Addr, time.Duration) (rdma.CMRoute, error) {
		t.Error("resolved though the check could not tell")
		return rdma.CMRoute{}, errors.New("unused")
	}
	cases := []struct {
		name    string
		env     Env
		far     *FarCM
		resolve CMResolver
		want    Status
		found   string
	}{
		{"ok", env, far, resolved("rxe1", "10.0.0.1"), OK, "bound to rxe1 port 1, sgid ::ffff:10.0.0.2, dgid ::ffff:10.0.0.1; address 1.20 ms, route 0.30 ms"},
		{"older far end", env, nil, unused, CannotTell, "older than the check"},
		{"far end cannot tell", env, &FarCM{Device: "mlx5_0", Error: "no GID"}, unused, CannotTell, "cannot tell the CM address of mlx5_0: no GID"},
		{"bad far address", env, &FarCM{Device: "rxe0", Addr: "ten"}, unused, CannotTell, "does not parse"},
		{"no verbs here", Env{Device: "rxe1"}, far, unused, CannotTell, "no verbs listing"},
		{"resolution fails", env, far, failed, Fail, "rdma_cm resolve_addr to 10.0.0.1"},
		{"another device", env, far, resolved("rxe0", "10.0.0.1"), Fail, "bound to rxe0 port 1"},
		{"another GID", env, far, resolved("rxe1", "10.0.0.9"), Fail, "dgid ::ffff:10.0.0.9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := PeerCM(tc.env, tc.far, "10.0.0.1:18520", tc.resolve)
			if c.Name != "cm.peer" || c.Device != "rxe1" || c.Status != tc.want || !strings.Contains(c.Found, tc.found) {
				t.Errorf("got %s %s/%d %v %q, want %v with %q", c.Name, c.Device, c.Port, c.Status, c.Found, tc.want, tc.found)
			}
			if c.Status == Fail && (c.Cost == "" || c.Fix == "") {
				t.Errorf("a failure without its cost and fix: %+v", c)
			}
		})
	}
}
