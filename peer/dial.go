package peer

import (
	"cmp"
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
)

// control is a client's control channel to a responder, as dialControl
// opened it, with how it reached the responder: what each request on it
// needs for its own deadlines and errors.
type control struct {
	conn *ctrl.Conn
	addr string        // the responder's host:port, as dialled
	step time.Duration // the bound on each control step
}

// dialControl opens the control channel to the responder cfg names, for
// a test, a relayed test or a doctor request alike: TCP to cfg.Addr (its
// port defaulting to ctrl.DefaultPort), TLS over it when cfg.TLS is set,
// then the token handshake, each bounded by a step of its own. A failure
// is an *Error at StageConnecting or StageHandshake, so it matches
// ErrUnreachable: nothing about the fabric is known yet.
func dialControl(ctx context.Context, cfg ClientConfig) (control, error) {
	c := control{addr: ctrl.WithDefaultPort(cfg.Addr), step: cfg.step()}
	sctx, cancel := context.WithTimeout(ctx, c.step)
	nc, err := ctrl.Dial(sctx, c.addr, cfg.TLS)
	cancel()
	if err != nil {
		return control{}, c.wrap(StageConnecting, err)
	}
	sctx, cancel = context.WithTimeout(ctx, c.step)
	c.conn, err = ctrl.Client(sctx, nc, cfg.Token)
	cancel()
	if err != nil {
		// ctrl.Client has closed nc.
		return control{}, c.wrap(StageHandshake, err)
	}
	return c, nil
}

// wrap says which responder failed at which stage. A refusal for want of
// a slot is read back as a *BusyError wherever it comes, so a caller can
// retry it.
func (c control) wrap(stage Stage, err error) error {
	return &Error{Addr: c.addr, Stage: stage, Err: asBusy(err)}
}

// step is cfg's bound on each control step: the channel's own default
// when cfg leaves it 0.
func (cfg ClientConfig) step() time.Duration {
	return cmp.Or(cfg.StepTimeout, ctrl.DefaultTimeout)
}

// hungUp reports whether the responder closed the connection without an
// error frame: what a release that does not know a request does on it.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
