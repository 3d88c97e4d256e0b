package ctrl

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestOtherVersionAfterHandshake: a frame of another protocol version in
// either direction, at any step after the handshake, ends the wait with
// an error matching ErrVersion that names both versions, within the
// deadline, never a hang; and an unknown kind of this version is an
// ErrUnknownKind that leaves the stream in step.
func TestOtherVersionAfterHandshake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version uint16
	}{{"older", Version - 1}, {"newer", Version + 1}} {
		for _, dir := range []string{"to the responder", "to the client"} {
			t.Run(tc.name+" "+dir, func(t *testing.T) {
				cnc, snc := connect(t, "tcp")
				client, server := handshake(cnc, snc, Options{}, Options{}, "s3cret", "s3cret")
				if client.err != nil || server.err != nil {
					t.Fatalf("handshake: %v, %v", client.err, server.err)
				}
				from, to := cnc, server.c
				if dir == "to the client" {
					from, to = snc, client.c
				}
				if _, err := from.Write(rawFrame(tc.version, KindSpec, `{}`)); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start := time.Now()
				err := to.Recv(ctx, KindSpec, nil)
				if took := time.Since(start); took >= 5*time.Second {
					t.Errorf("the error came after %v: it waited for the deadline", took)
				}
				wantErr(t, err, fmt.Sprintf("speaks control protocol version %d, this end speaks %d", tc.version, Version))
				if !errors.Is(err, ErrVersion) {
					t.Errorf("errors.Is(%v, ErrVersion) is false", err)
				}
			})
		}
	}
	t.Run("unknown kind", func(t *testing.T) {
		cnc, snc := connect(t, "tcp")
		client, server := handshake(cnc, snc, Options{}, Options{}, "", "")
		if client.err != nil || server.err != nil {
			t.Fatalf("handshake: %v, %v", client.err, server.err)
		}
		if _, err := snc.Write(append(rawFrame(Version, kindEnd+7, `{"new":1}`), rawFrame(Version, KindSpecOK, `{}`)...)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, err := client.c.RecvAny(ctx)
		if !errors.Is(err, ErrUnknownKind) {
			t.Errorf("a kind of a newer build: %v, want ErrUnknownKind", err)
		}
		if err := client.c.Recv(ctx, KindSpecOK, nil); err != nil {
			t.Errorf("the frame after it: %v, want the stream in step", err)
		}
	})
}
