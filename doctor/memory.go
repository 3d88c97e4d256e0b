package doctor

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmarun/rdmarun/rdma"
)

// parseMeminfo reads /proc/meminfo: "Name:   value" rows, most with a
// "kB" unit (which is KiB). Values are returned as written, without
// applying the unit; huge page counts have none.
func parseMeminfo(s string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || name == "" || strings.ContainsAny(name, " \t") || len(f) == 0 || len(f) > 2 || (len(f) == 2 && f[1] != "kB") {
			return nil, fmt.Errorf("meminfo row %q: want \"Name: value [kB]\"", line)
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("meminfo row %q: %q is not a count", line, f[0])
		}
		out[name] = v
	}
	if len(out) == 0 {
		return nil, errors.New("meminfo is empty")
	}
	return out, nil
}

// hugepagesNeed is what the default bandwidth test with hugepages: true
// needs on both ends of a loopback.
func hugepagesNeed() int64 {
	t, err := rdma.TestSpec{Measure: rdma.MeasureBandwidth, Hugepages: true}.Complete()
	if err != nil {
		panic("doctor: the default bandwidth test with huge pages does not complete: " + err.Error())
	}
	return 2 * rdma.SpecConfig(t, rdma.EndpointConfig{}).RegisteredBytes()
}

func checkHugepages(env Env) Check {
	need := hugepagesNeed()
	c := Check{Name: "memory.hugepages", Expected: fmt.Sprintf("at least %s free in huge pages, for tests with hugepages: true", bytesText(need))}
	path := filepath.Join(env.Proc, "meminfo")
	s, err := read(path)
	if err != nil {
		c.Status, c.Found = CannotTell, "cannot read "+path+": "+why(err)
		return c
	}
	m, err := parseMeminfo(s)
	if err != nil {
		c.Status, c.Found = CannotTell, err.Error()
		return c
	}
	total, ok1 := m["HugePages_Total"]
	free, ok2 := m["HugePages_Free"]
	sizeKiB, ok3 := m["Hugepagesize"]
	if !ok1 || !ok2 || !ok3 || sizeKiB == 0 {
		c.Status, c.Found = NotApplicable, "the kernel has no huge pages (no HugePages_ rows in meminfo)"
		return c
	}
	c.Found = fmt.Sprintf("%d free of %d, %s each", free, total, bytesText(int64(sizeKiB)*1024))
	if free*sizeKiB*1024 >= uint64(need) {
		c.Status = OK
		return c
	}
	c.Status = Warn
	c.Cost = "tests with hugepages: true cannot allocate their buffers; tests without are unaffected"
	pages := (uint64(need) + sizeKiB*1024 - 1) / (sizeKiB * 1024)
	c.Fix = fmt.Sprintf("reserve %d more: sysctl vm.nr_hugepages=%d", pages-free, total+pages-free)
	return c
}
