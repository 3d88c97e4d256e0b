package portstats

import (
	"runtime"
	"testing"
	"time"
)

// sink keeps the busy loop from being optimised away.
var sink uint64

func TestCPUSpanBusyLoop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU time is only measured on linux")
	}
	span := StartCPU()
	var u CPUUsage
	// The kernel may account CPU time in whole ticks, so spin until one
	// lands on us instead of for a fixed time; the deadline only stops a
	// broken CPUTime from hanging the test.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		x := sink
		for i := range 1_000_000 {
			x = x*6364136223846793005 + uint64(i)
		}
		sink = x
		if u = span.Stop(); u.Err != nil || u.User > 0 {
			break
		}
	}
	if u.Err != nil {
		t.Fatal(u.Err)
	}
	if u.User <= 0 {
		t.Fatalf("User = %v after a busy loop, want > 0", u.User)
	}
	if u.Sys < 0 || u.Total() != u.User+u.Sys {
		t.Errorf("Sys = %v, Total = %v for User = %v", u.Sys, u.Total(), u.User)
	}
}

func TestCPUUsagePerOp(t *testing.T) {
	tests := []struct {
		u    CPUUsage
		n    int
		want time.Duration
	}{
		{CPUUsage{User: 3 * time.Millisecond, Sys: time.Millisecond}, 1000, 4 * time.Microsecond},
		{CPUUsage{User: time.Second}, 1, time.Second},
		{CPUUsage{User: time.Second}, 0, 0},
		{CPUUsage{User: time.Second}, -5, 0},
		{CPUUsage{}, 10, 0},
	}
	for _, tt := range tests {
		if got := tt.u.PerOp(tt.n); got != tt.want {
			t.Errorf("%+v.PerOp(%d) = %v, want %v", tt.u, tt.n, got, tt.want)
		}
	}
}

func TestCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, _, err := CPUTime(); err == nil {
			t.Error("CPUTime reported no error where it is not implemented")
		}
		return
	}
	u, s, err := CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	if u < 0 || s < 0 {
		t.Errorf("CPUTime = %v, %v; want non-negative", u, s)
	}
}
