package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dumps receives each Write as one string: a dump must be one write.
type dumps chan string

func (d dumps) Write(p []byte) (int, error) {
	d <- string(p)
	return len(p), nil
}

// Each signal gets one whole dump, in one write, between the marks and
// naming the dumping goroutine itself; the loop ends with its context.
func TestDumpStacksOnSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	out := make(dumps, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		dumpStacksOnSignal(ctx, sigs, out)
	}()
	for i := 1; i <= 2; i++ {
		sigs <- syscall.SIGUSR1
		select {
		case got := <-out:
			if !strings.HasPrefix(got, stacksBegin+"\n") || !strings.HasSuffix(got, stacksEnd+"\n") {
				t.Errorf("dump %d is not one whole dump between the marks:\n%s", i, got)
			}
			if !strings.Contains(got, ".dumpStacksOnSignal(") || !strings.Contains(got, "\ngoroutine ") {
				t.Errorf("dump %d lacks the dumping goroutine's stack:\n%s", i, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no dump %d within 5 s", i)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the dump loop did not end with its context")
	}
}
