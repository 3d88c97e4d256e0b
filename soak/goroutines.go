package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// SummarizeGoroutines reads the goroutine stacks a Go program writes when
// it gets SIGQUIT (out may hold other log lines too) and counts them by the
// function that started each one, with the states they were in: one line
// per starter, most first. Goroutines the runtime started for itself are
// left out; they are not the program's and go_goroutines does not count
// them either. The first goroutine has no starter and is named "main".
func SummarizeGoroutines(out string) string {
	type starter struct {
		count  int
		states map[string]int
	}
	starters := map[string]*starter{}
	var state string
	inStack := false
	end := func(creator string) {
		if !inStack {
			return
		}
		inStack = false
		if strings.HasPrefix(creator, "runtime.") {
			return
		}
		s := starters[creator]
		if s == nil {
			s = &starter{states: map[string]int{}}
			starters[creator] = s
		}
		s.count++
		s.states[state]++
	}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "goroutine "):
			end("main")
			lb, rb := strings.LastIndexByte(line, '['), strings.LastIndexByte(line, ']')
			if lb < 0 || rb < lb || strings.HasPrefix(line, "goroutine 0 ") {
				continue
			}
			// "[IO wait, 3 minutes]": the state without how long.
			state, _, _ = strings.Cut(line[lb+1:rb], ",")
			inStack = true
		case strings.HasPrefix(line, "created by "):
			creator, _, _ := strings.Cut(strings.TrimPrefix(line, "created by "), " in goroutine ")
			end(creator)
		case line == "":
			end("main")
		}
	}
	end("main")
	if len(starters) == 0 {
		return "(no goroutine stacks in the output)"
	}
	names := slices.Collect(maps.Keys(starters))
	slices.SortFunc(names, func(a, b string) int {
		if d := starters[b].count - starters[a].count; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, n := range names {
		s := starters[n]
		states := make([]string, 0, len(s.states))
		for st, k := range s.states {
			states = append(states, fmt.Sprintf("%s %d", st, k))
		}
		slices.Sort(states)
		fmt.Fprintf(&b, "%3d %s [%s]\n", s.count, n, strings.Join(states, ", "))
	}
	return b.String()
}
