package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
)

// ResponderWait is how WaitForResponders waits.
type ResponderWait struct {
	// Within bounds the whole wait.
	Within time.Duration
	// Every is the pause between two tries of a host that did not
	// answer; 0 means a second.
	Every time.Duration
	// Dial tries one host's control port; nil means a TCP connect, closed
	// at once (a responder counts that as a readiness check, not a test).
	Dial func(ctx context.Context, addr string) error
	// Waiting, when set, hears the hosts still silent after the first try
	// and whenever that set changes, for a log line.
	Waiting func(silent []string)
}

// waitParallel bounds the dials of one pass at once: a fleet of
// thousands must not open thousands of sockets in the same instant.
const waitParallel = 64

// waitDialTimeout bounds one try: a host whose SYN goes unanswered is
// tried again rather than waited on for the kernel's minutes.
const waitDialTimeout = 3 * time.Second

// WaitForResponders tries every host's control port until each has
// answered once, or w.Within passes: a fleet whose responders are still
// starting (a Kubernetes Job created beside their DaemonSet, a batch job
// whose serve step has just begun) is then tested whole rather than
// failing its first pairs as environment errors. The error names every
// host that never answered, with its last dial error.
func WaitForResponders(ctx context.Context, hosts []fleet.Host, w ResponderWait) error {
	if w.Within <= 0 {
		return fmt.Errorf("runner: waiting for responders needs a time limit above 0, not %v", w.Within)
	}
	every := w.Every
	if every <= 0 {
		every = time.Second
	}
	dial := w.Dial
	if dial == nil {
		dial = dialOnce
	}
	ctx, cancel := context.WithTimeout(ctx, w.Within)
	defer cancel()

	silent := make([]int, len(hosts))
	for i := range hosts {
		silent[i] = i
	}
	last := make([]error, len(hosts))
	reported := ""
	for {
		silent = tryHosts(ctx, hosts, silent, last, dial)
		if len(silent) == 0 {
			return nil
		}
		if names := hostNames(hosts, silent); w.Waiting != nil && strings.Join(names, " ") != reported {
			reported = strings.Join(names, " ")
			w.Waiting(names)
		}
		select {
		case <-ctx.Done():
			return waitError(ctx, hosts, silent, last, w.Within)
		case <-time.After(every):
		}
	}
}

// tryHosts dials the silent hosts once, at most waitParallel at a time,
// and returns those still silent, in order, with their errors in last.
func tryHosts(ctx context.Context, hosts []fleet.Host, silent []int, last []error, dial func(context.Context, string) error) []int {
	answered := make([]bool, len(silent))
	sem := make(chan struct{}, waitParallel)
	var wg sync.WaitGroup
	for k, i := range silent {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, waitDialTimeout)
			defer cancel()
			err := dial(dctx, hosts[i].DialAddr())
			// Each goroutine writes only its own host's slots. A try the
			// end of the wait cut short says less than the one before.
			if err == nil || ctx.Err() == nil || last[i] == nil {
				last[i] = err
			}
			answered[k] = err == nil
		})
	}
	wg.Wait()
	var still []int
	for k, i := range silent {
		if !answered[k] {
			still = append(still, i)
		}
	}
	return still
}

func dialOnce(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

func hostNames(hosts []fleet.Host, idx []int) []string {
	names := make([]string, len(idx))
	for k, i := range idx {
		names[k] = hosts[i].Name
	}
	return names
}

// waitError names the silent hosts and why each did not answer.
func waitError(ctx context.Context, hosts []fleet.Host, silent []int, last []error, within time.Duration) error {
	if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stopped waiting for the responders: %w", err)
	}
	parts := make([]string, len(silent))
	for k, i := range silent {
		why := "no answer"
		if last[i] != nil {
			why = last[i].Error()
		}
		parts[k] = fmt.Sprintf("%s (%s: %s)", hosts[i].Name, hosts[i].DialAddr(), why)
	}
	return fmt.Errorf("%d of %d responders did not answer within %v: %s; check that each runs rdmarun serve (or the exporter's responder) listening on that port, or wait longer",
		len(silent), len(hosts), within, strings.Join(parts, ", "))
}
