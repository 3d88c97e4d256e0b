package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/fleet"
)

// TestWaitForResponders: hosts that start answering late are waited for;
// the wait returns as soon as the last one answers, and retries only the
// silent ones.
func TestWaitForResponders(t *testing.T) {
	hosts := []fleet.Host{{Name: "a", Addr: "10.0.0.1:18520"}, {Name: "b", Addr: "10.0.0.2"}, {Name: "c", Addr: "10.0.0.3:1"}}
	// Each host answers from its how-manieth try.
	from := map[string]int{"10.0.0.1:18520": 1, "10.0.0.2:18520": 3, "10.0.0.3:1": 5}
	var mu sync.Mutex
	tries := map[string]int{}
	var heard [][]string
	err := WaitForResponders(context.Background(), hosts, ResponderWait{
		Within: 5 * time.Second, Every: time.Millisecond,
		Dial: func(_ context.Context, addr string) error {
			mu.Lock()
			defer mu.Unlock()
			tries[addr]++
			if tries[addr] < from[addr] {
				return errors.New("connection refused")
			}
			return nil
		},
		Waiting: func(silent []string) { heard = append(heard, silent) },
	})
	if err != nil {
		t.Fatal(err)
	}
	for addr, n := range from {
		if tries[addr] != n {
			t.Errorf("%s tried %d times, want %d (until it answered, never after)", addr, tries[addr], n)
		}
	}
	if got := fmt.Sprint(heard); got != "[[b c] [c]]" {
		t.Errorf("told of the silent hosts %s, want [[b c] [c]]: once per change", got)
	}
}

// TestWaitForRespondersDeadline: a host that never answers ends the wait
// at its limit with an error naming it, its address and its last error,
// and not the hosts that did answer; a real port that listens answers
// the default dial.
func TestWaitForRespondersDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A port just freed: nothing listens there.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := closed.Addr().String()
	closed.Close()
	hosts := []fleet.Host{{Name: "up", Addr: ln.Addr().String()}, {Name: "down", Addr: dead}}
	start := time.Now()
	err = WaitForResponders(context.Background(), hosts, ResponderWait{Within: 300 * time.Millisecond, Every: 20 * time.Millisecond})
	took := time.Since(start)
	if err == nil {
		t.Fatal("a host that never listens was waited for successfully")
	}
	msg := err.Error()
	for _, want := range []string{"1 of 2 responders did not answer within 300ms: down (" + dead + ": ", "connection refused", "rdmarun serve"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "up (") {
		t.Errorf("error %q names a host that answered", msg)
	}
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("gave up after %v, want the 300ms limit", took)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitForResponders(ctx, hosts[1:], ResponderWait{Within: time.Minute}); err == nil || !strings.Contains(err.Error(), "stopped waiting for the responders: context canceled") {
		t.Errorf("a cancelled wait: %v", err)
	}
	if err := WaitForResponders(context.Background(), hosts, ResponderWait{}); err == nil || !strings.Contains(err.Error(), "time limit above 0") {
		t.Errorf("no limit: %v", err)
	}
}
