package runner

import (
	"context"

	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/runner/report"
)

// ending is how one run ended, for the caller's stop rules: Execute stops
// a scenario on an interruption or the environment, a fleet stops the
// pair.
type ending int

const (
	endJudged      ending = iota // a result, judged by the run's thresholds
	endInterrupted               // the context ended it
	endEnvironment               // a host's own set-up or an unreachable responder, not the fabric
	endError                     // the test itself failed: the fabric, a peer, or this program
)

// settle records on out how a run that returned res and err ended, the
// one judging path of Execute and ExecuteFleet. linkGbps is the port's
// rate for link_gbps, 0 when it is not known.
func settle(ctx context.Context, out *report.Run, r Run, res *rdma.Result, err error, linkGbps float64) ending {
	switch {
	case err != nil && ctx.Err() != nil:
		out.Status, out.Error = report.Skipped, "interrupted"
		return endInterrupted
	case err != nil && peer.Environmental(err):
		out.Status, out.Error = report.Errored, err.Error()
		return endEnvironment
	case err != nil:
		out.Status, out.Error = report.Errored, err.Error()
		return endError
	}
	judgeRun(out, r, res, linkGbps)
	return endJudged
}

// aborts reports whether a run's end stops the rest under abort_on_fail:
// a failed threshold or a failed test, never the environment.
func aborts(r Run, out *report.Run, e ending) bool {
	return r.AbortOnFail && (out.Status == report.Failed || e == endError)
}
