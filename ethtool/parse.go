package ethtool

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads the output of `ethtool -S NETDEV`: a header
// such as "NIC statistics:", then one "name: value" row per statistic.
// Names may contain colons (some drivers name queues "rx-0:packets"), so
// a row splits at its last colon. Saved host trees (doctor.EnvAt) and
// fixtures hold this text where a live host answers Stats.
func Parse(s string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasSuffix(t, ":") {
			continue // blank, or a header
		}
		i := strings.LastIndex(t, ":")
		if i <= 0 {
			return nil, fmt.Errorf("ethtool statistics row %q: want \"name: value\"", line)
		}
		name := strings.TrimSpace(t[:i])
		v, err := strconv.ParseUint(strings.TrimSpace(t[i+1:]), 10, 64)
		if err != nil || name == "" {
			return nil, fmt.Errorf("ethtool statistics row %q: want \"name: value\"", line)
		}
		out[name] = v
	}
	return out, nil
}
