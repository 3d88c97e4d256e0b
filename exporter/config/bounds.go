package config

import (
	"fmt"
	"maps"
	"slices"
)

// checkStaticBounds refuses a static list that targets.max_per_module or
// targets.max_probe_series could not probe whole: the list is in the
// config, so it is the config that is wrong, and a load error says so at
// once, where files and DNS answers (which change under a running
// exporter) are bounded when probed instead.
func (c *Config) checkStaticBounds() error {
	perModule := map[string]int{}
	series := 0
	for _, t := range c.Targets.Static {
		perModule[t.Module]++
		series += len(c.Modules[t.Module].Tests)
	}
	for _, m := range slices.Sorted(maps.Keys(perModule)) {
		if n := perModule[m]; n > c.Targets.MaxPerModule {
			return fmt.Errorf("targets: static has %d targets of module %q, more than targets.max_per_module %d; raise it or list fewer", n, m, c.Targets.MaxPerModule)
		}
	}
	if series > c.Targets.MaxProbeSeries {
		return fmt.Errorf("targets: static makes %d probe series (a target times its module's specs), more than targets.max_probe_series %d; raise it or list fewer", series, c.Targets.MaxProbeSeries)
	}
	return nil
}
