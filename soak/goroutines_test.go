package soak

import (
	"os"
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
