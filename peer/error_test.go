package peer

import (
	"errors"
	"fmt"
	"testing"
)

// TestErrorUnreachable: only the stages before the responder accepted
// this client say the environment is unusable; later ones are the
// test's own failures.
func TestErrorUnreachable(t *testing.T) {
	for stage, want := range map[Stage]bool{
		StageConnecting: true, StageHandshake: true,
		StageSendSpec: false, StageEndpoints: false, StageTest: false, StageAwaitResult: false,
	} {
		err := fmt.Errorf("run: %w", &Error{Addr: "h:1", Stage: stage, Err: errors.New("x")})
		if got := errors.Is(err, ErrUnreachable); got != want {
			t.Errorf("stage %q: errors.Is(ErrUnreachable) = %v, want %v", stage, got, want)
		}
	}
}
