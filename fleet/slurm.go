package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// SlurmTimeout bounds scontrol when the caller's context has no deadline:
// expanding a node list is local work for scontrol, so seconds are ample
// and a hung controller must not hang the run.
const SlurmTimeout = 30 * time.Second

// SlurmHosts expands a Slurm node list (SLURM_JOB_NODELIST, e.g.
// "node[01-04],gpu7") into host names with Slurm's own
// `scontrol show hostnames`, so every range and suffix form Slurm accepts
// expands exactly as Slurm expands it.
func SlurmHosts(ctx context.Context, nodelist string) ([]string, error) {
	nodelist = strings.TrimSpace(nodelist)
	if nodelist == "" {
		return nil, errors.New("empty Slurm node list (is SLURM_JOB_NODELIST set?): run inside a Slurm allocation or give the hosts explicitly")
	}
	path, err := exec.LookPath("scontrol")
	if err != nil {
		return nil, fmt.Errorf("expand Slurm node list %q: scontrol not found on PATH: run inside a Slurm allocation or give the hosts explicitly", nodelist)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, SlurmTimeout)
		defer cancel()
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "show", "hostnames", nodelist)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A killed scontrol may leave a child holding the pipes; stop waiting
	// for them shortly after the kill.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("expand Slurm node list %q: scontrol did not finish: %w", nodelist, ctx.Err())
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("expand Slurm node list %q: scontrol: %s", nodelist, msg)
	}
	names := strings.Fields(stdout.String())
	if len(names) == 0 {
		return nil, fmt.Errorf("expand Slurm node list %q: scontrol printed no host names", nodelist)
	}
	return names, nil
}
