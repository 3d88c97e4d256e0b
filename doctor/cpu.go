package doctor

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// cpufreqDirs are the cpufreq directories of the CPUs that have one.
func cpufreqDirs(env Env) []string {
	dirs, _ := filepath.Glob(filepath.Join(env.Sys, "devices", "system", "cpu", "cpu[0-9]*", "cpufreq"))
	return dirs
}

const noCpufreq = "no cpufreq: the kernel does not scale the clock here (a VM, or scaling off in the firmware)"

// checkGovernor: a governor other than performance lets the clock drop
// while a latency test waits, and the next operations run slow until it
// ramps: the bimodal latency acceptance runs blame on the host.
func checkGovernor(env Env) Check {
	c := Check{Name: "cpu.governor", Expected: "performance on every CPU"}
	dirs := cpufreqDirs(env)
	if len(dirs) == 0 {
		c.Status, c.Found = NotApplicable, noCpufreq
		return c
	}
	count := map[string]int{}
	for _, d := range dirs {
		g, err := read(d, "scaling_governor")
		if err != nil {
			g = "unreadable"
		}
		count[g]++
	}
	var found []string
	for _, g := range slices.Sorted(maps.Keys(count)) {
		found = append(found, fmt.Sprintf("%s on %d of %d CPUs", g, count[g], len(dirs)))
	}
	c.Found = strings.Join(found, ", ")
	if count["performance"] == len(dirs) {
		c.Status = OK
		return c
	}
	c.Status = Fail
	c.Cost = "the clock drops while tests wait and ramps under load: bimodal latency and a lower message rate"
	c.Fix = "cpupower frequency-set -g performance (or the tuned profile latency-performance)"
	return c
}

// checkFrequency says whether the clock can move at all: a performance
// governor over a range still lets the firmware scale it.
func checkFrequency(env Env) Check {
	c := Check{Name: "cpu.frequency", Expected: "a fixed clock, or the performance governor holding it at the top"}
	dirs := cpufreqDirs(env)
	if len(dirs) == 0 {
		c.Status, c.Found = NotApplicable, noCpufreq
		return c
	}
	scaling, performance := 0, 0
	var lo, hi int
	for _, d := range dirs {
		minText, err1 := read(d, "scaling_min_freq")
		maxText, err2 := read(d, "scaling_max_freq")
		a, err3 := strconv.Atoi(minText)
		b, err4 := strconv.Atoi(maxText)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			c.Status, c.Found = CannotTell, filepath.Base(filepath.Dir(d))+": scaling_min_freq or scaling_max_freq unreadable"
			return c
		}
		if a < b {
			scaling++
			lo, hi = a, b
		}
		if g, _ := read(d, "scaling_governor"); g == "performance" {
			performance++
		}
	}
	if scaling == 0 {
		c.Status, c.Found = OK, "fixed: scaling_min_freq equals scaling_max_freq on every CPU"
		return c
	}
	c.Found = fmt.Sprintf("on: %d of %d CPUs scale (e.g. %d to %d MHz)", scaling, len(dirs), lo/1000, hi/1000)
	if performance == len(dirs) {
		c.Status = OK
		return c
	}
	c.Status = Warn
	c.Cost = "per-operation time varies with the clock; see cpu.governor"
	c.Fix = "the performance governor, or scaling_min_freq = scaling_max_freq"
	return c
}
