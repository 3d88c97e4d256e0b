//go:build testbed

package soak_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/soak"
)

// A client process: it runs its share of the plan (test i when i modulo
// the clients is its number), one at a time, and writes each outcome as a
// JSON line on stdout. Misbehaviours whose point is to make the
// responder wait (a stall, a half-open connection, garbage) run beside
// the next tests, as a crowd's broken clients would.

// busyWait bounds how long a client retries busy answers for one test:
// nobody waits for ever.
const busyWait = 2 * time.Minute

// testLimit bounds one test, set-up, runs and teardown.
const testLimit = 3 * time.Minute

type clientEnv struct {
	cfg     peer.ClientConfig
	plan    []soak.Case
	index   int
	clients int

	mu  sync.Mutex
	enc *json.Encoder
	bg  sync.WaitGroup
}

func getenvInt(name string) (int, error) {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

func loadClientEnv() (*clientEnv, error) {
	seed, err := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envSeed, err)
	}
	tests, err := getenvInt(envTests)
	if err != nil {
		return nil, err
	}
	e := &clientEnv{plan: soak.Plan(seed, tests), enc: json.NewEncoder(os.Stdout)}
	if e.index, err = getenvInt(envClient); err != nil {
		return nil, err
	}
	if e.clients, err = getenvInt(envCount); err != nil {
		return nil, err
	}
	token, err := ctrl.ReadToken(os.Getenv(envToken))
	if err != nil {
		return nil, err
	}
	e.cfg = peer.ClientConfig{Addr: os.Getenv(envAddr), Token: token, Device: clientDevice, GIDIndex: rdma.AutoGIDIndex}
	return e, nil
}

func clientMain() int {
	e, err := loadClientEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak client:", err)
		return 2
	}
	for i := e.index; i < len(e.plan); i += e.clients {
		c := e.plan[i]
		start := time.Now()
		o := soak.Outcome{Index: i, Kind: c.Misbehaviour.String()}
		report := func(o soak.Outcome, err error) {
			o.OK = err == nil
			if err != nil {
				o.Err = err.Error()
			}
			o.Seconds = time.Since(start).Seconds()
			e.mu.Lock()
			defer e.mu.Unlock()
			_ = e.enc.Encode(o)
		}
		switch c.Misbehaviour {
		case soak.Good:
			o, err := e.good(c, o)
			report(o, err)
		case soak.KilledMidTest:
			report(o, e.killMidTest(c))
		case soak.CloseMidHandshake:
			report(o, e.closeMidHandshake())
		case soak.WrongToken:
			report(o, e.wrongToken())
		case soak.GarbageFrames, soak.HalfOpen, soak.StallPastStep:
			e.bg.Add(1)
			go func() {
				defer e.bg.Done()
				var err error
				switch c.Misbehaviour {
				case soak.GarbageFrames:
					err = e.garbage(c)
				case soak.HalfOpen:
					err = e.halfOpen()
				default:
					err = e.stall(c)
				}
				report(o, err)
			}()
		default:
			report(o, fmt.Errorf("no client for %s", c.Misbehaviour))
		}
	}
	e.bg.Wait()
	return 0
}

// isBusy: the responder had no test slot and said so (a *peer.BusyError,
// with its retry hint); the client tries again.
func isBusy(err error) bool {
	var busy *peer.BusyError
	return errors.As(err, &busy)
}

// dial sets spec up, retrying busy answers with a growing pause.
func (e *clientEnv) dial(ctx context.Context, spec rdma.Test, keep time.Duration, busy *int) (*peer.Session, error) {
	return dialRetry(ctx, e.cfg, spec, keep, busy)
}

func dialRetry(ctx context.Context, cfg peer.ClientConfig, spec rdma.Test, keep time.Duration, busy *int) (*peer.Session, error) {
	giveUp := time.Now().Add(busyWait)
	pause := 20 * time.Millisecond
	for {
		s, err := peer.Dial(ctx, cfg, spec, keep)
		if !isBusy(err) {
			return s, err
		}
		*busy++
		if time.Now().After(giveUp) {
			return nil, fmt.Errorf("busy for %v: %w", busyWait, err)
		}
		select {
		case <-time.After(pause + rand.N(pause)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// good runs a good test: Runs runs, on one kept session when the
// responder grants it, each result checked for sense.
func (e *clientEnv) good(c soak.Case, o soak.Outcome) (soak.Outcome, error) {
	o.Test = fmt.Sprintf("%s/%s/%s/%s", c.Spec.Op, c.Spec.Measure, c.Spec.Mode, c.Spec.QPType)
	o.Size, o.QPs, o.Runs = c.Spec.Size, c.Spec.QPs, c.Runs
	spec, err := c.Spec.Complete()
	if err != nil {
		return o, fmt.Errorf("the plan made an invalid spec: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testLimit)
	defer cancel()
	var keep time.Duration
	if c.Runs > 1 {
		keep = 30 * time.Second
	}
	cfg := e.cfg
	cfg.SkipPortCounters = c.SkipPortCounters
	var s *peer.Session
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	for run := 0; run < c.Runs; run++ {
		if s == nil || (run > 0 && !s.Usable()) {
			if s != nil {
				s.Close()
			}
			if s, err = dialRetry(ctx, cfg, spec, keep, &o.Busy); err != nil {
				s = nil
				return o, fmt.Errorf("run %d: %w", run+1, err)
			}
			o.Kept = o.Kept || s.Idle() > 0
		}
		res, err := s.Run(ctx)
		if isBusy(err) && run > 0 {
			// A kept session's next run found every slot taken: the
			// responder ended the session; a new one takes its turn.
			o.Busy++
			run--
			continue
		}
		if err != nil {
			return o, fmt.Errorf("run %d: %w", run+1, err)
		}
		if err := soak.CheckResult(spec, res); err != nil {
			return o, fmt.Errorf("run %d: %w", run+1, err)
		}
	}
	return o, nil
}

// killMidTest starts a client process whose test runs for 30 s, and
// SIGKILLs it once the test is under way: the responder must see the
// control channel close and free that test's QPs and memory.
func (e *clientEnv) killMidTest(c soak.Case) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envRole+"=victim", fmt.Sprintf("%s=%d", envCase, c.Index))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	running := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		running <- line
		_, _ = io.Copy(io.Discard, out)
		exited <- cmd.Wait()
	}()
	// The victim may meet busy answers first, for as long as any client.
	select {
	case line := <-running:
		if line != "running\n" {
			<-exited
			return fmt.Errorf("the victim did not start its test: %q %s", line, stderr.String())
		}
	case <-time.After(busyWait + 2*responderStep):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("the victim had not started its test after %v", busyWait+2*responderStep)
	}
	time.Sleep(c.KillAfter)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	err = <-exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		return fmt.Errorf("the victim ended by itself before the kill (%v): %s", err, stderr.String())
	}
	return nil
}

// victimMain is the process killMidTest kills: it sets its test up, says
// so, and runs it.
func victimMain() int {
	e, err := loadClientEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak victim:", err)
		return 2
	}
	i, err := getenvInt(envCase)
	if err != nil || i < 0 || i >= len(e.plan) {
		fmt.Fprintln(os.Stderr, "soak victim: no such case", os.Getenv(envCase))
		return 2
	}
	spec, err := e.plan[i].Spec.Complete()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak victim:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), testLimit)
	defer cancel()
	var busy int
	s, err := e.dial(ctx, spec, 0, &busy)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak victim:", err)
		return 1
	}
	fmt.Println("running")
	_, err = s.Run(ctx)
	fmt.Fprintln(os.Stderr, "soak victim: the test ended before the kill:", err)
	return 1
}

// hangUpWithin waits for the responder to close nc, reading and
// discarding what it says (an error frame) meanwhile. It is how a
// misbehaving client checks the responder's promise that nobody holds a
// connection past its step deadline.
func hangUpWithin(nc net.Conn, within time.Duration) error {
	start := time.Now()
	_ = nc.SetReadDeadline(start.Add(within))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the responder still held the connection after %v", within)
	}
	return nil // EOF (nil from Copy) or a reset: it hung up
}

func (e *clientEnv) dialRaw() (net.Conn, error) {
	return net.DialTimeout("tcp", e.cfg.Addr, responderStep)
}

// closeMidHandshake says hello, reads the responder's hello and hangs up.
func (e *clientEnv) closeMidHandshake() error {
	nc, err := e.dialRaw()
	if err != nil {
		return err
	}
	defer nc.Close()
	c := ctrl.NewConn(nc, ctrl.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), responderStep)
	defer cancel()
	if err := c.Send(ctx, ctrl.KindHello, map[string]any{"version": ctrl.Version, "auth": true}); err != nil {
		return err
	}
	kind, _, err := c.RecvAny(ctx)
	if err != nil || kind != ctrl.KindHello {
		return fmt.Errorf("the responder answered a hello with %v, %v; want its hello", kind, err)
	}
	return nil
}

// wrongToken runs a test with another fleet's token: refused, as an
// authentication failure.
func (e *clientEnv) wrongToken() error {
	cfg := e.cfg
	cfg.Token = "not-this-fleets-token"
	spec, err := rdma.TestSpec{Op: rdma.OpWrite, Iterations: 10}.Complete()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*responderStep)
	defer cancel()
	_, err = peer.Run(ctx, cfg, spec)
	if !errors.Is(err, ctrl.ErrAuth) {
		return fmt.Errorf("got %v, want an authentication error", err)
	}
	return nil
}

// garbage sends frames with the right magic and nonsense kinds, lengths
// and payloads, or bytes that are no frame at all; the responder must
// refuse and hang up within its step deadline (a frame promising more
// bytes than come makes it wait that long).
func (e *clientEnv) garbage(c soak.Case) error {
	r := rand.New(rand.NewPCG(c.Garbage, 1))
	nc, err := e.dialRaw()
	if err != nil {
		return err
	}
	defer nc.Close()
	var b []byte
	for range 1 + r.IntN(4) {
		if r.IntN(4) == 0 {
			b = binary.BigEndian.AppendUint64(b, r.Uint64()) // no magic at all
			continue
		}
		payload := make([]byte, r.IntN(64))
		for i := range payload {
			payload[i] = byte(r.Uint32())
		}
		length := uint32(len(payload))
		if r.IntN(3) == 0 {
			length = r.Uint32() // a length that lies
		}
		b = append(b, 'R', 'D', 'M', 'R')
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(3)))
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(20)))
		b = binary.BigEndian.AppendUint32(b, length)
		b = append(b, payload...)
	}
	_ = nc.SetWriteDeadline(time.Now().Add(responderStep))
	// The responder may hang up before it has read everything: a failed
	// write is its refusal, not the client's failure.
	_, _ = nc.Write(b)
	return hangUpWithin(nc, 2*responderStep)
}

// halfOpen sends the start of a frame header and never the rest.
func (e *clientEnv) halfOpen() error {
	nc, err := e.dialRaw()
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("RDMR\x00")); err != nil {
		return err
	}
	return hangUpWithin(nc, 2*responderStep)
}

// stall sets a test up, QPs connected and memory registered on both
// ends, then says nothing for longer than the responder's step deadline:
// the responder must have given up and freed its side, so the late run
// fails.
func (e *clientEnv) stall(c soak.Case) error {
	spec, err := c.Spec.Complete()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), testLimit)
	defer cancel()
	var busy int
	s, err := e.dial(ctx, spec, 0, &busy)
	if err != nil {
		return err
	}
	defer s.Close()
	time.Sleep(responderStep + 2*time.Second)
	if _, err := s.Run(ctx); err == nil {
		return fmt.Errorf("a run %v after set-up succeeded: the responder waited past its step deadline of %v", responderStep+2*time.Second, responderStep)
	}
	return nil
}
