// Package netfault injects real network faults into the testbed VM for
// tests: the veth under a soft-RoCE device goes down, or netem drops its
// packets. It runs the ip and tc tools, so it works only as root inside
// the VM (tests with the testbed build tag).
package netfault

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/sysfs"
)

// IP runs `ip ARGS...` and fails t if it fails.
func IP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// TC runs `tc ARGS...` and fails t if it fails.
func TC(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
		t.Fatalf("tc %v: %v: %s", args, err, out)
	}
}

// Loss makes dev drop pct (e.g. "5%") of every packet it sends, ARP
// included. The returned func removes it; so does t's cleanup.
func Loss(t testing.TB, dev, pct string) (remove func()) {
	t.Helper()
	TC(t, "qdisc", "add", "dev", dev, "root", "netem", "loss", pct)
	return removeRoot(t, dev)
}

// ForgetNeighbours flushes the neighbour (ARP) entries of each dev, as
// they expire by themselves when a host goes away. Under total loss a QP
// connect then has to resolve the peer's address afresh and times out
// within seconds, instead of whenever the stale entry happens to expire
// (15 to 45 s and more).
func ForgetNeighbours(t testing.TB, devs ...string) {
	t.Helper()
	for _, dev := range devs {
		IP(t, "neigh", "flush", "dev", dev)
	}
}

// RoCELoss makes dev drop pct of the RoCE packets it sends (UDP port
// 4791) and nothing else: ARP still answers, so QPs connect and a test
// fails on the RDMA data path itself. The returned func removes it; so
// does t's cleanup.
func RoCELoss(t testing.TB, dev, pct string) (remove func()) {
	t.Helper()
	TC(t, "qdisc", "add", "dev", dev, "root", "handle", "1:", "prio")
	TC(t, "qdisc", "add", "dev", dev, "parent", "1:3", "handle", "30:", "netem", "loss", pct)
	TC(t, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
		"match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", "4791", "0xffff", "flowid", "1:3")
	return removeRoot(t, dev)
}

// CMLoss makes dev drop pct of the RoCE packets it sends to QP 1, the
// general services QP that carries the connection manager's MADs, and
// nothing else: on RoCE the CM has no UDP port of its own, so this is how
// a filter "drops the CM port" while ARP, the control channel and the
// data QPs still pass. The match assumes an IPv4 header without options,
// as rxe sends: the BTH's destination QP is the low 24 bits of the word at
// offset 32 (IP 20 bytes, UDP 8, BTH bytes 4 to 7).
func CMLoss(t testing.TB, dev, pct string) (remove func()) {
	t.Helper()
	TC(t, "qdisc", "add", "dev", dev, "root", "handle", "1:", "prio")
	TC(t, "qdisc", "add", "dev", dev, "parent", "1:3", "handle", "30:", "netem", "loss", pct)
	TC(t, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
		"match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", "4791", "0xffff",
		"match", "u32", "0x00000001", "0x00ffffff", "at", "32", "flowid", "1:3")
	return removeRoot(t, dev)
}

func removeRoot(t testing.TB, dev string) func() {
	done := false
	remove := func() {
		if !done {
			done = true
			TC(t, "qdisc", "del", "dev", dev, "root")
		}
	}
	t.Cleanup(remove)
	return remove
}

// PortsActive reports whether every named RDMA device's port 1 is ACTIVE,
// and the states it read.
func PortsActive(devs ...string) (bool, string) {
	var states []string
	ok := true
	for _, dev := range devs {
		p, err := sysfs.ReadPort(sysfs.Root, dev, 1, sysfs.Attributes)
		s := p.State.Name
		if err == nil {
			err = p.Err("state")
		}
		if err != nil {
			s = err.Error()
		}
		states = append(states, dev+" "+s)
		ok = ok && err == nil && p.State.Name == "ACTIVE"
	}
	return ok, strings.Join(states, ", ")
}

// WaitActive waits at most limit for the devices' ports to be ACTIVE
// again after a fault, and fails t if they are not.
func WaitActive(t testing.TB, limit time.Duration, devs ...string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, states := PortsActive(devs...)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ports not ACTIVE %v after the fault was removed: %s", limit, states)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitSending waits at most limit for dev's port 1 to send `packets` more
// RDMA packets than when it was called, and fails t if it does not. A
// test that injects a fault mid-transfer waits so instead of sleeping:
// on a loaded host, connecting the QPs can take longer than any sleep,
// and a fault that lands before they connect tests the connect instead.
func WaitSending(t testing.TB, limit time.Duration, dev string, packets uint64) {
	t.Helper()
	// rxe counts in hw_counters only; other drivers keep the PMA counter.
	file := filepath.Join(sysfs.Root, dev, "ports/1/hw_counters/sent_pkts")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(sysfs.Root, dev, "ports/1/counters/port_xmit_packets")
	}
	read := func() uint64 {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		return v
	}
	start := read()
	deadline := time.Now().Add(limit)
	for read()-start < packets {
		if time.Now().After(deadline) {
			t.Fatalf("%s sent fewer than %d packets in %v: the transfer did not start", dev, packets, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
