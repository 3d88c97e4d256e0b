package soak

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSummarizeGoroutines(t *testing.T) {
	sigquit, err := os.ReadFile("testdata/sigquit.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, out, want string
	}{
		{
			// An idle `rdmarun serve` in the VM, ended with SIGQUIT.
			name: "idle serve",
			out:  string(sigquit),
			want: "  2 main.startMetrics [IO wait 1, chan receive 1]\n" +
				"  1 github.com/rdmarun/rdmarun/peer.(*Server).Serve [chan receive 1]\n" +
				"  1 main [IO wait 1]\n" +
				"  1 main.(*serveCmd).run [select 1]\n" +
				"  1 os/signal.Notify.func1.1 [syscall 1]\n" +
				"  1 os/signal.NotifyContext [select 1]\n",
		},
		{
			name: "durations and log lines around the stacks",
			out: "time=... level=WARN msg=x\n" +
				"goroutine 7 [IO wait, 3 minutes]:\nnet.(*pollDesc).wait(...)\n" +
				"created by example.com/p.handle in goroutine 1\n\tp.go:10 +0x1\n\n" +
				"goroutine 8 [select]:\ncreated by example.com/p.handle in goroutine 1\n\n" +
				"goroutine 9 [GC worker (idle)]:\ncreated by runtime.gcBgMarkStartWorkers in goroutine 1\n",
			want: "  2 example.com/p.handle [IO wait 1, select 1]\n",
		},
		{
			name: "no stacks",
			out:  "exit status 2\n",
			want: "(no goroutine stacks in the output)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SummarizeGoroutines(tc.out); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func FuzzSummarizeGoroutines(f *testing.F) {
	sigquit, err := os.ReadFile("testdata/sigquit.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(sigquit))
	f.Add("goroutine 1 [\ncreated by ]\n")
	f.Fuzz(func(t *testing.T, out string) {
		got := SummarizeGoroutines(out)
		if got == "" || (!strings.HasPrefix(got, "(") && !strings.HasSuffix(got, "]\n")) {
			t.Fatalf("summary %q is neither a list of starters nor the empty note", got)
		}
	})
}

func TestGoroutineGrowth(t *testing.T) {
	idle := ParseGoroutines("goroutine 1 [IO wait]:\n\ngoroutine 7 [select]:\ncreated by example.com/p.watch in goroutine 1\n")
	for _, tc := range []struct {
		name, end string
		want      []string
	}{
		{"the same at rest, states aside", "goroutine 1 [IO wait, 50 minutes]:\n\ngoroutine 9 [chan receive]:\ncreated by example.com/p.watch in goroutine 1\n", nil},
		{"fewer", "goroutine 1 [IO wait]:\n", nil},
		{"one more of a starter", "goroutine 1 [IO wait]:\n\ngoroutine 7 [select]:\ncreated by example.com/p.watch in goroutine 1\n\ngoroutine 8 [select]:\ncreated by example.com/p.watch in goroutine 1\n",
			[]string{"2 goroutines started by example.com/p.watch, 1 at idle"}},
		{"a new starter", "goroutine 1 [IO wait]:\n\ngoroutine 7 [select]:\ncreated by example.com/p.watch in goroutine 1\n\ngoroutine 30 [IO wait]:\ncreated by example.com/p.handle in goroutine 1\n",
			[]string{"1 goroutines started by example.com/p.handle, 0 at idle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GoroutineGrowth(idle, ParseGoroutines(tc.end)); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
