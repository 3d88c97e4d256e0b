package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmarun/rdmarun/runner/report"
)

// openPTY returns both ends of a new pseudo-terminal, or skips where the
// machine has no devpts to give one.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// isTerminal tells a terminal from the outputs that are not one, a
// character device among them: what the ModeCharDevice test it replaces
// took for a terminal.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if st, err := null.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is not a character device (%v)", os.DevNull, err)
	}
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for name, f := range map[string]*os.File{"a pipe": w, os.DevNull: null, "a file": file} {
		if isTerminal(f) {
			t.Errorf("%s counts as a terminal", name)
		}
	}
	_, tty := openPTY(t)
	if !isTerminal(tty) {
		t.Error("a pseudo-terminal does not count as one")
	}
}

// On a terminal progress rewrites its line, unless TERM or CI says its
// output is kept: the control for TestDemoReportPiped, which sees no
// escape through a pipe.
func TestProgressOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		term, ci string
		live     bool
	}{{"xterm-256color", "", true}, {"dumb", "", false}, {"xterm-256color", "true", false}} {
		t.Run(tc.term+" CI="+tc.ci, func(t *testing.T) {
			t.Setenv("TERM", tc.term)
			t.Setenv("CI", tc.ci)
			master, tty := openPTY(t)
			p := progress(tty)
			run := &report.Run{Case: "write-latency"}
			p(0, 1, run)
			run.Status = report.Passed
			p(1, 1, run)
			// A line per run ends the output either way, for the read below.
			fmt.Fprintln(tty, "end")
			got := readUntil(t, master, "end")
			if live := strings.Contains(got, "\r\033[K[1/1] write-latency "); live != tc.live {
				t.Errorf("output %q: line rewritten %v, want %v", got, live, tc.live)
			}
			if !tc.live && (strings.ContainsRune(got, 0x1b) || !strings.Contains(got, "run 1/1: write-latency ")) {
				t.Errorf("output %q: want a plain line and no escape", got)
			}
		})
	}
}

// readUntil reads the pseudo-terminal's far end until it has seen end.
func readUntil(t *testing.T, master *os.File, end string) string {
	t.Helper()
	if err := master.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), end) {
		n, err := master.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
	}
	return string(got)
}
