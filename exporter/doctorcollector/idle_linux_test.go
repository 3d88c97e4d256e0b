package doctorcollector

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// threadNice is the nice value of the calling OS thread, field 19 of
// /proc/thread-self/stat, or -100 when it cannot be read. It reports no
// error through t, since it runs on goroutines other than the test's.
func threadNice() int {
	b, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		return -100
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(fields[19-3])
	if err != nil {
		return -100
	}
	return n
}

func TestRunIdleLowersOnlyItsThread(t *testing.T) {
	before := threadNice()
	if before == -100 {
		t.Fatal("cannot read this thread's nice value from /proc/thread-self/stat")
	}
	var inside int
	runIdle(func() { inside = threadNice() })
	if inside != idleNice {
		t.Errorf("inside runIdle the thread's nice is %d, want %d", inside, idleNice)
	}
	if after := threadNice(); after != before {
		t.Errorf("the caller's thread went from nice %d to %d", before, after)
	}
	// The niced thread ended with its goroutine: new goroutines run at
	// the process's priority.
	for range 20 {
		got := make(chan int)
		go func() { got <- threadNice() }()
		if n := <-got; n == idleNice && before != idleNice {
			t.Fatalf("a later goroutine runs at nice %d: the idle thread went back to the pool", n)
		}
	}
}
