package main

import (
	"io"
	"os"
)

// liveLine says whether the progress line may rewrite itself on w with a
// carriage return and an erase to the end of the line. Being a terminal
// is not enough: the testbed VM's output is a serial line, a terminal
// whose every byte ends up in a log, and CI logs keep the escapes too.
func liveLine(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	return ok && rewritesLines(isTerminal(f), getenv)
}

// rewritesLines is liveLine's rule, given whether the output is a
// terminal: TERM empty or dumb says nothing renders the escapes (the
// testbed runs commands with TERM=dumb), and CI, set to anything, says a
// log is the only reader.
func rewritesLines(tty bool, getenv func(string) string) bool {
	if term := getenv("TERM"); term == "" || term == "dumb" {
		return false
	}
	return getenv("CI") == "" && tty
}
