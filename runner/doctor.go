package runner

import (
	"context"

	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// Diagnosed is a target whose ends the doctor can examine. Execute asks
// it once a threshold has failed, so the report says what on either
// host may be why.
type Diagnosed interface {
	Doctor(ctx context.Context) []report.DoctorEnd
}

// hostEnv is this host for the doctor: its files, and the ports' MTUs
// from verbs. Tests give a saved host's files instead.
var hostEnv = func() doctor.Env { return doctor.HostEnv().WithVerbs(rdma.Devices) }

// localDoctor runs the doctor on this host's devices; 0 ports mean
// every port of them.
func localDoctor(devices []string, port int) (doctor.Report, doctor.Env) {
	env := hostEnv()
	env.Port = port
	var r doctor.Report
	for i, d := range devices {
		env.Device = d
		one := doctor.Run(env)
		if i == 0 {
			r = one
			continue
		}
		// The host's own checks came with the first device.
		r.Devices = append(r.Devices, one.Devices...)
		for _, c := range one.Checks {
			if c.Device != "" {
				r.Checks = append(r.Checks, c)
			}
		}
	}
	return r, env
}

// Doctor implements Diagnosed: both ends are this host's devices.
func (l *Loopback) Doctor(context.Context) []report.DoctorEnd {
	devs := []string{l.Local.Device}
	if l.Peer.Device != l.Local.Device {
		devs = append(devs, l.Peer.Device)
	}
	r, _ := localDoctor(devs, l.Local.Port)
	return []report.DoctorEnd{report.NewDoctorEnd("local", r)}
}

// Doctor implements Diagnosed: this host's device, and the responder's
// host asked over the control channel; with both, mtu.peer compares
// their MTUs.
func (r *Remote) Doctor(ctx context.Context) []report.DoctorEnd {
	local, env := localDoctor([]string{r.Local.Device}, r.Local.Port)
	far, err := peer.Doctor(ctx, peer.ClientConfig{Addr: r.Addr, Token: r.Token, TLS: r.TLS}, r.PeerDevice, 0)
	if err != nil {
		return []report.DoctorEnd{report.NewDoctorEnd("local", local), report.DoctorEndError(r.Addr, err)}
	}
	if len(far.MTUs) > 0 {
		local.SetPeerMTU(doctor.MTUs(env), far.MTUs[0], r.Addr)
	}
	return []report.DoctorEnd{report.NewDoctorEnd("local", local), report.NewDoctorEnd(r.Addr, far.Report)}
}

// diagnose attaches the doctor's findings when a threshold failed and
// the target can be examined; not after an interruption, which wants
// the program to end.
func diagnose(ctx context.Context, rep *report.Report, target Target) {
	d, ok := target.(Diagnosed)
	if !ok || rep.Summary.Failed == 0 || ctx.Err() != nil {
		return
	}
	rep.Doctor = d.Doctor(ctx)
}
