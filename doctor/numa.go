package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// parseCPUList reads the kernel's CPU list format, "0-3,8,10-11", as in
// local_cpulist and nodeN/cpulist. The empty list is valid. CPU numbers
// stop at 65536, far above any kernel's NR_CPUS, so a typo cannot expand
// into billions of entries.
func parseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	var cpus []int
	if s == "" {
		return cpus, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > 1<<16 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 1<<16 {
				return nil, fmt.Errorf("CPU list %q: %q is not a range", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// ParseCPUs reads a list of CPUs given on the command line, in the
// kernel's format ("0-3,8").
func ParseCPUs(s string) ([]int, error) {
	cpus, err := parseCPUList(s)
	if err == nil && len(cpus) == 0 {
		return nil, errors.New("empty CPU list")
	}
	return cpus, err
}

func checkNUMA(t *target) Check {
	c := t.deviceCheck("numa.node", "the CPUs tests pin to on the device's NUMA node")
	if t.pci == "" {
		c.Status, c.Found = NotApplicable, "a software device has no NUMA node of its own"
		return c
	}
	nodes, _ := filepath.Glob(filepath.Join(t.env.Sys, "devices", "system", "node", "node[0-9]*"))
	if len(nodes) == 1 {
		c.Status, c.Found = OK, "one NUMA node"
		return c
	}
	s, err := read(t.pci, "numa_node")
	if err != nil {
		c.Status, c.Found = CannotTell, "numa_node: "+why(err)
		return c
	}
	if s == "-1" {
		c.Status, c.Found = NotApplicable, "the platform assigns the device no NUMA node"
		return c
	}
	local, err := os.ReadFile(filepath.Join(t.pci, "local_cpulist"))
	if err != nil {
		c.Status, c.Found = CannotTell, "local_cpulist: "+why(err)
		return c
	}
	localCPUs, err := parseCPUList(string(local))
	if err != nil {
		c.Status, c.Found = CannotTell, err.Error()
		return c
	}
	localText := strings.TrimSpace(string(local))
	c.Found = fmt.Sprintf("device on node %s (CPUs %s)", s, localText)
	if t.env.CPUs == nil {
		c.Status = NotApplicable
		c.Expected = "the CPUs a test pins to (--cpus)"
		c.Fix = fmt.Sprintf("pin tests to CPUs of %s (cpus: in a scenario, or numactl)", localText)
		return c
	}
	var remote []string
	for _, cpu := range t.env.CPUs {
		if _, ok := slices.BinarySearch(localCPUs, cpu); !ok {
			remote = append(remote, strconv.Itoa(cpu))
		}
	}
	if len(remote) == 0 {
		c.Status = OK
		return c
	}
	c.Status = Fail
	c.Found += "; CPUs " + strings.Join(remote, ",") + " are on another node"
	c.Cost = "every completion and buffer access crosses the socket interconnect: higher latency, lower message rate"
	c.Fix = fmt.Sprintf("pin tests to CPUs of %s", localText)
	return c
}
