package peer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
)

// BusyError is a responder turning this client away because it serves
// as many tests as it may at once (rdmarun serve --max-concurrent). It is
// not the test's failure: the same test later may well run, and
// RetryAfter says when that is likely (0: the responder did not say).
type BusyError struct {
	Running    int           // tests under way on the responder
	RetryAfter time.Duration // when a slot is likely free; 0: unknown
	Err        error         // the responder's answer as received
}

func (e *BusyError) Error() string { return e.Err.Error() }
func (e *BusyError) Unwrap() error { return e.Err }

// The busy answer travels as a plain error frame, so a client of any
// release shows its text; this build reads the numbers back out of it.
// Responders before the retry hint said "...; try again shortly".
const busyPrefix = "responder busy: "

// busyMessage is the responder's busy answer.
func busyMessage(running, max int, retry time.Duration, key string) string {
	return fmt.Sprintf("%s%d tests under way (%s %d); retry after %ds", busyPrefix, running, key, max, int64(retry/time.Second))
}

// parseBusy reads a busy answer back; ok is false for any other message.
func parseBusy(msg string) (running int, retry time.Duration, ok bool) {
	rest, found := strings.CutPrefix(msg, busyPrefix)
	if !found {
		return 0, 0, false
	}
	digits := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
	running, err := strconv.Atoi(digits)
	if err != nil || !strings.HasPrefix(rest[len(digits):], " tests under way") {
		return 0, 0, false
	}
	if _, after, found := strings.Cut(rest, "; retry after "); found {
		secs, unit := after[:len(after)-len(strings.TrimLeft(after, "0123456789"))], after
		unit = unit[len(secs):]
		n, err := strconv.ParseInt(secs, 10, 32)
		if err == nil && n >= 0 && unit == "s" {
			retry = time.Duration(n) * time.Second
		}
	}
	return running, retry, true
}

// asBusy turns a responder's busy answer into a *BusyError; any other
// error comes back as it is.
func asBusy(err error) error {
	var re *ctrl.RemoteError
	if !errors.As(err, &re) || re.Code != "" {
		return err
	}
	running, retry, ok := parseBusy(re.Msg)
	if !ok {
		return err
	}
	return &BusyError{Running: running, RetryAfter: retry, Err: err}
}
