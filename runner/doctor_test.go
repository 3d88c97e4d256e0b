package runner

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/doctor/doctortest"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/peer/peertest"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// diagnosedTarget is a fakeTarget the doctor can examine; it counts
// the examinations.
type diagnosedTarget struct {
	fakeTarget
	asked int
}

func (d *diagnosedTarget) Doctor(context.Context) []report.DoctorEnd {
	d.asked++
	return []report.DoctorEnd{{Host: "local", Devices: []string{"rxe0"}, OK: 3, Findings: []doctor.Check{}}}
}

// The doctor is asked once, after the runs, when a threshold failed,
// and only then.
func TestExecuteDiagnoses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []func(rdma.Test) (*rdma.Result, error)
		asked   int
	}{
		{"all pass", []func(rdma.Test) (*rdma.Result, error){latencyResult(5)}, 0},
		{"two fail", []func(rdma.Test) (*rdma.Result, error){latencyResult(50), latencyResult(5), latencyResult(50)}, 1},
		{"errors only", []func(rdma.Test) (*rdma.Result, error){failWith(&rdma.StallError{Device: "rxe0"})}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := &diagnosedTarget{fakeTarget: fakeTarget{results: tc.results}}
			rep, err := Execute(context.Background(), load(t, false), target, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if target.asked != tc.asked || (len(rep.Doctor) > 0) != (tc.asked > 0) {
				t.Errorf("asked %d times, report's doctor %+v; want %d", target.asked, rep.Doctor, tc.asked)
			}
		})
	}
}

func savedHost(t *testing.T, name string) doctor.Env {
	t.Helper()
	return doctortest.SavedHost(t, filepath.Join("..", "doctor", "testdata", name))
}

// useHost makes this host, for the doctor, a saved one.
func useHost(t *testing.T, name string) {
	env := savedHost(t, name)
	saved := hostEnv
	hostEnv = func() doctor.Env { return env }
	t.Cleanup(func() { hostEnv = saved })
}

// A remote target's doctor examines both hosts, and compares their
// MTUs: a host at netdev MTU 9000 against the broken one at 1500 fails
// mtu.peer on this end; the far end's own failures come with it.
func TestRemoteDoctor(t *testing.T) {
	useHost(t, "mlx5-roce")
	far := savedHost(t, "broken")
	addr := peertest.Serve(t, peer.ServerConfig{Token: "fleet", DoctorEnv: func() doctor.Env { return far }}, nil)

	ends := (&Remote{Addr: addr, Token: "fleet", Local: Endpoint{Device: "mlx5_0", Port: 1}}).Doctor(context.Background())
	if len(ends) != 2 || ends[0].Host != "local" || ends[1].Host != addr {
		t.Fatalf("ends %+v, want local and %s", ends, addr)
	}
	var failed []string
	for _, c := range ends[0].Findings {
		if c.Status == doctor.Fail {
			failed = append(failed, c.Name)
		}
	}
	if strings.Join(failed, ",") != "mtu.peer" || ends[0].OK == 0 {
		t.Errorf("this end's failed findings %q, ok %d; want mtu.peer alone, and the ok checks counted", failed, ends[0].OK)
	}
	if len(ends[1].Findings) == 0 || ends[1].Findings[0].Status != doctor.Fail || ends[1].Error != "" {
		t.Errorf("the far end: %+v, want its failures first", ends[1])
	}
	for _, e := range ends {
		for _, c := range e.Findings {
			if c.Status < doctor.CannotTell {
				t.Errorf("%s: finding %s is %s: only fail, warn and cannot_tell belong in a report", e.Host, c.Name, c.Status)
			}
		}
	}

	// A responder that cannot be asked is named, not fatal.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close()
	ends = (&Remote{Addr: goneAddr, Local: Endpoint{Device: "mlx5_0", Port: 1}}).Doctor(context.Background())
	if len(ends) != 2 || ends[1].Host != goneAddr || !strings.Contains(ends[1].Error, "connecting") {
		t.Errorf("an unreachable responder: %+v", ends)
	}
}

// A loopback target's doctor examines this host once, both devices.
func TestLoopbackDoctor(t *testing.T) {
	useHost(t, "mlx5-ib")
	ends := (&Loopback{Local: Endpoint{Device: "mlx5_0"}, Peer: Endpoint{Device: "mlx5_0"}}).Doctor(context.Background())
	if len(ends) != 1 || ends[0].Host != "local" || strings.Join(ends[0].Devices, ",") != "mlx5_0" || ends[0].OK == 0 {
		t.Errorf("ends %+v, want this host's mlx5_0 once", ends)
	}
}
