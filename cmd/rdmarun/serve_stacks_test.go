package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Each signal gets one whole dump between the marks, naming the dumping
// goroutine itself; the loop ends with its context.
func TestDumpStacksOnSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	var out syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		dumpStacksOnSignal(ctx, sigs, &out)
	}()
	for i := 1; i <= 2; i++ {
		sigs <- syscall.SIGUSR1
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(out.String(), stacksEnd) < i {
			if time.Now().After(deadline) {
				t.Fatalf("no dump %d within 5 s:\n%s", i, out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	got := out.String()
	if n := strings.Count(got, stacksBegin); n != 2 {
		t.Errorf("%d dumps begun, want 2", n)
	}
	if !strings.Contains(got, ".dumpStacksOnSignal(") || !strings.Contains(got, "goroutine ") {
		t.Errorf("the dump lacks the dumping goroutine's stack:\n%s", got)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the dump loop did not end with its context")
	}
}
