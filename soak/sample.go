package soak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sample is the responder's resources at one moment of the soak, and the
// kernel's RDMA objects over every device (the clients' included: when
// the stream ends they must be gone too).
type Sample struct {
	// Label says when: "idle", "after N tests", "end".
	Label string
	At    time.Duration // since the responder started
	FDs   int
	// Goroutines is go_goroutines, read during a scrape: it counts the
	// scrape's own goroutines too (see Growth).
	Goroutines int
	Threads    int
	RSSBytes   int64
	// RDMA counts objects by type as `rdma resource show` names them
	// (pd, cq, qp, mr, cm_id, ctx, srq), summed over devices.
	RDMA map[string]int
	// Stacks are the goroutines at rest, from a dump of their stacks
	// (rdmarun serve writes one on SIGUSR1); taken at idle and at the
	// end only.
	Stacks Starters
}

// ProcStatus is what the soak reads from /proc/PID/status.
type ProcStatus struct {
	Threads  int
	RSSBytes int64
}

// ParseProcStatus reads the Threads and VmRSS lines of /proc/PID/status.
// Both must be there: a status without them is not a live process's.
func ParseProcStatus(b []byte) (ProcStatus, error) {
	var st ProcStatus
	var haveThreads, haveRSS bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		switch key {
		case "Threads":
			if len(fields) != 1 {
				return st, fmt.Errorf("status line %q: want one number of threads", sc.Text())
			}
			n, err := strconv.Atoi(fields[0])
			if err != nil || n < 1 {
				return st, fmt.Errorf("status line %q: want a positive count of threads", sc.Text())
			}
			st.Threads, haveThreads = n, true
		case "VmRSS":
			// The kernel writes "VmRSS:	   12345 kB" (kibibytes).
			if len(fields) != 2 || fields[1] != "kB" {
				return st, fmt.Errorf("VmRSS line %q: want a number and kB", sc.Text())
			}
			n, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil || n < 0 || n > 1<<40 {
				return st, fmt.Errorf("VmRSS line %q: want a count of kB", sc.Text())
			}
			st.RSSBytes, haveRSS = n<<10, true
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if !haveThreads || !haveRSS {
		return st, fmt.Errorf("no Threads or VmRSS line: not the status of a live process")
	}
	return st, nil
}

// ParseRDMAResources sums `rdma -j resource show` over its devices: one
// count per object type. ifindex and ifname describe the device and are
// not counts.
func ParseRDMAResources(b []byte) (map[string]int, error) {
	var devs []map[string]json.RawMessage
	if err := json.Unmarshal(b, &devs); err != nil {
		return nil, fmt.Errorf("rdma resource show: %w", err)
	}
	counts := map[string]int{}
	for _, d := range devs {
		if _, ok := d["ifname"]; !ok {
			return nil, fmt.Errorf("rdma resource show: a device without ifname: %v", slices.Sorted(maps.Keys(d)))
		}
		for k, v := range d {
			if k == "ifindex" || k == "ifname" {
				continue
			}
			var n int
			// Far beyond what a kernel holds, and safe to add up.
			if err := json.Unmarshal(v, &n); err != nil || n < 0 || n > 1<<31 {
				return nil, fmt.Errorf("rdma resource show: %s is %s, want a count", k, v)
			}
			counts[k] += n
		}
	}
	return counts, nil
}

// Growth lists what end holds beyond base: every count that must come
// back exactly (fds, goroutines at rest, RDMA objects), threads beyond
// maxThreads and RSS beyond maxRSS. Empty means no leak.
//
// Goroutines are compared by their stacks at rest (Sample.Stacks), not by
// go_goroutines: that gauge is read during the scrape, beside the
// registry's own collecting goroutines, whose number depends on how the
// scrape was scheduled. An idle responder read 10 in one scrape and 12 in
// another, and a soak ended on 12 against an idle 10 with the same seven
// goroutines at rest in both.
func Growth(base, end Sample, maxThreads int, maxRSS int64) []string {
	var out []string
	if end.FDs > base.FDs {
		out = append(out, fmt.Sprintf("fds %d, baseline %d", end.FDs, base.FDs))
	}
	out = append(out, GoroutineGrowth(base.Stacks, end.Stacks)...)
	if end.Threads > maxThreads {
		out = append(out, fmt.Sprintf("threads %d, bound %d", end.Threads, maxThreads))
	}
	if end.RSSBytes > maxRSS {
		out = append(out, fmt.Sprintf("RSS %d bytes, bound %d", end.RSSBytes, maxRSS))
	}
	for _, k := range slices.Sorted(maps.Keys(end.RDMA)) {
		if end.RDMA[k] > base.RDMA[k] {
			out = append(out, fmt.Sprintf("RDMA %s %d, baseline %d", k, end.RDMA[k], base.RDMA[k]))
		}
	}
	return out
}
