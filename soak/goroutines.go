package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Starters are a program's goroutines counted by the function that
// started each one, from a dump of their stacks.
type Starters map[string]*Started

// Started is how many goroutines one function started, and the states
// they were in when dumped.
type Started struct {
	Count  int
	States map[string]int
}

// ParseGoroutines reads goroutine stacks as a Go program writes them, on
// SIGQUIT or through the goroutine profile's debug=2 form (out may hold
// other log lines too). Goroutines the runtime started for itself are
// left out: they are not the program's, and they come and go with its
// garbage collector. The first goroutine has no starter and is named
// "main".
func ParseGoroutines(out string) Starters {
	starters := Starters{}
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
			s = &Started{States: map[string]int{}}
			starters[creator] = s
		}
		s.Count++
		s.States[state]++
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
	return starters
}

// Total is how many goroutines s counts.
func (s Starters) Total() int {
	n := 0
	for _, st := range s {
		n += st.Count
	}
	return n
}

// String lists the starters one per line, most goroutines first, with
// their states.
func (s Starters) String() string {
	if len(s) == 0 {
		return "(no goroutine stacks in the output)"
	}
	names := slices.Collect(maps.Keys(s))
	slices.SortFunc(names, func(a, b string) int {
		if d := s[b].Count - s[a].Count; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, n := range names {
		st := s[n]
		states := make([]string, 0, len(st.States))
		for state, k := range st.States {
			states = append(states, fmt.Sprintf("%s %d", state, k))
		}
		slices.Sort(states)
		fmt.Fprintf(&b, "%3d %s [%s]\n", st.Count, n, strings.Join(states, ", "))
	}
	return b.String()
}

// SummarizeGoroutines is ParseGoroutines(out).String().
func SummarizeGoroutines(out string) string { return ParseGoroutines(out).String() }

// GoroutineGrowth lists the starters that have more goroutines in end
// than in base; empty means none was left behind.
func GoroutineGrowth(base, end Starters) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(end)) {
		had := 0
		if b := base[n]; b != nil {
			had = b.Count
		}
		if end[n].Count > had {
			out = append(out, fmt.Sprintf("%d goroutines started by %s, %d at idle", end[n].Count, n, had))
		}
	}
	return out
}
