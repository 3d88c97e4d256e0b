package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime/pprof"
)

// Marks around the stacks a SIGUSR1 dump writes, so that a reader of the
// log (the soak) finds where one dump begins and ends.
const (
	stacksBegin = "SIGUSR1: goroutine stacks follow"
	stacksEnd   = "SIGUSR1: end of goroutine stacks"
)

// dumpStacksOnSignal writes every goroutine's stack to w each time a
// signal arrives on sigs, until ctx ends: what a running responder is
// doing or holding, seen without stopping it as SIGQUIT would. Each dump
// is one write, so log lines cannot land inside it.
func dumpStacksOnSignal(ctx context.Context, sigs <-chan os.Signal, w io.Writer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
		}
		var b bytes.Buffer
		b.WriteString(stacksBegin + "\n")
		// debug=2: the form of a crash's traceback, one stack per
		// goroutine with the function that started it.
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		b.WriteString(stacksEnd + "\n")
		_, _ = w.Write(b.Bytes())
	}
}
