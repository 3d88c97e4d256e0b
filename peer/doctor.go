package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/doctor"
	"github.com/rdmarun/rdmarun/rdma"
)

// doctorMsg asks a responder for its doctor's report: a device and port
// of its own, empty and 0 for the responder's settings.
type doctorMsg struct {
	Device string `json:"device,omitempty"`
	Port   int    `json:"port,omitempty"`
	// List asks for the host's devices alone (see Devices), not the
	// doctor's checks; a responder before it ignores it.
	List bool `json:"list,omitempty"`
}

// doctorReportMsg answers it: the report, and the ports' MTUs as
// numbers, which mtu.peer compares with the asking end's.
type doctorReportMsg struct {
	Report doctor.Report    `json:"report"`
	MTUs   []doctor.PortMTU `json:"mtus"`
	// CM is where a connection to the device asked goes through the
	// CM, for the asking end's cm.peer; absent from older responders.
	CM *doctor.FarCM `json:"cm,omitempty"`
	// Devices answers a listing (doctorMsg.List), in place of the
	// report; absent from older responders.
	Devices *FarDevices `json:"devices,omitempty"`
}

// FarReport is the far end's doctor report, as Doctor fetches it.
type FarReport struct {
	Addr   string // the responder asked, host:port
	Report doctor.Report
	// MTUs are the far end's ports' MTUs at each layer: what
	// doctor.PeerMTU compares with this end's.
	MTUs []doctor.PortMTU
	// CM is the far device's CM address and GID, what doctor.PeerCM
	// resolves; nil from a responder older than it.
	CM *doctor.FarCM
}

// StageDoctor is the stage of a doctor request that failed after the
// handshake.
const StageDoctor Stage = "asking for its doctor's report"

// Doctor asks the responder at cfg.Addr for the doctor's checks of its
// own host, on device and port (empty and 0: the responder's own
// --device and port). Token and TLS are cfg's, as for a test; no RDMA
// runs. A responder of a release before the request answers with an
// error, which comes back saying to upgrade it.
func Doctor(ctx context.Context, cfg ClientConfig, device string, port int) (*FarReport, error) {
	ans, addr, err := askDoctor(ctx, cfg, doctorMsg{Device: device, Port: port})
	if err != nil {
		return nil, err
	}
	return &FarReport{Addr: addr, Report: ans.Report, MTUs: ans.MTUs, CM: ans.CM}, nil
}

// askDoctor sends a doctor request and returns the answer, with the
// address asked.
func askDoctor(ctx context.Context, cfg ClientConfig, req doctorMsg) (*doctorReportMsg, string, error) {
	ch, err := dialControl(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	c, addr := ch.conn, ch.addr
	defer c.Close()

	// The answer is bounded by doctorSteps steps, not one: the
	// responder reads its host (every port's files, and its verbs
	// listing), which takes seconds on a loaded or emulated host. An
	// older responder answers at once, so only a silent one waits.
	rctx, rcancel := context.WithTimeout(ctx, doctorSteps*ch.step)
	defer rcancel()
	var ans doctorReportMsg
	err = c.Send(rctx, ctrl.KindDoctor, req)
	if err == nil {
		err = c.Recv(rctx, ctrl.KindDoctorReport, &ans)
	}
	if err != nil {
		return nil, addr, ch.wrap(StageDoctor, olderDoctor(addr, err))
	}
	_ = c.Send(rctx, ctrl.KindBye, nil) // a courtesy: the responder waits a step for it at most
	return &ans, addr, nil
}

// doctorSteps is how many control steps a responder has to run its
// doctor and answer. Measured in the testbed VM (soft-RoCE under
// emulation, two cores shared with a soak's VM): 4 to over 10 s while
// the GID tables were read through sysfs (1,024 entries, three files
// each, on rxe), 1.6 to 2.1 s since they come from the verbs listing,
// and 0.5 to 1 s on an idle VM. Two 10 s steps leave ten times the
// worst of those; a silent responder fails in 20 s, not a minute.
const doctorSteps = 2

// olderDoctor explains the answers of a responder that predates the
// doctor request: builds with the relay kinds answer an unknown kind
// with an error naming it; older ones hang up.
func olderDoctor(addr string, err error) error {
	var re *ctrl.RemoteError
	switch {
	case errors.As(err, &re) && (strings.Contains(re.Msg, ctrl.ErrUnknownKind.Error()) || strings.Contains(re.Msg, "want spec or relay")):
		return fmt.Errorf("the responder at %s is older than the doctor request; upgrade it (it answered: %s)", addr, re.Msg)
	case hungUp(err):
		return fmt.Errorf("the responder at %s closed the connection on the doctor request, as a release older than the request does; upgrade it: %w", addr, err)
	}
	return err
}

// serveDoctor answers a doctor request with the checks of this host,
// for the device asked or the responder's own.
func (s *Server) serveDoctor(ctx context.Context, c *ctrl.Conn, payload json.RawMessage, fail func(error) error) error {
	var req doctorMsg
	if err := json.Unmarshal(payload, &req); err != nil {
		return fail(fmt.Errorf("the doctor request does not decode: %w", err))
	}
	if req.Port < 0 || req.Port > 255 {
		return fail(fmt.Errorf("the doctor request names port %d, out of range 1..255", req.Port))
	}
	if req.List {
		devs, err := s.deviceList()
		if err != nil {
			return fail(err)
		}
		return s.answerDoctor(ctx, c, doctorReportMsg{Devices: devs})
	}
	env := s.doctorEnv()
	env.Device, env.Port = s.cfg.Device, s.cfg.Port
	if req.Device != "" {
		env.Device = req.Device
	}
	if req.Port != 0 {
		env.Port = req.Port
	}
	r := doctor.Run(env)
	if len(r.Devices) == 0 && env.Device != "" {
		return fail(fmt.Errorf("no RDMA device %s on this responder", env.Device))
	}
	return s.answerDoctor(ctx, c, doctorReportMsg{Report: r, MTUs: doctor.MTUs(env), CM: doctor.CMOf(env, r)})
}

func (s *Server) answerDoctor(ctx context.Context, c *ctrl.Conn, msg doctorReportMsg) error {
	if err := s.send(ctx, c, ctrl.KindDoctorReport, msg); err != nil {
		return err
	}
	bctx, bcancel := s.step(ctx)
	_ = c.Recv(bctx, ctrl.KindBye, nil) // a courtesy, as after a test
	bcancel()
	return nil
}

// doctorEnv is the host the doctor looks at: ServerConfig.DoctorEnv's,
// else this one with the ports' MTUs from verbs when it can be asked.
func (s *Server) doctorEnv() doctor.Env {
	if s.cfg.DoctorEnv != nil {
		return s.cfg.DoctorEnv()
	}
	return doctor.HostEnv().WithVerbs(rdma.Devices)
}
