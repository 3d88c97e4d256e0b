// Package yamlerr reports problems in the project's YAML files (scenarios,
// the exporter's configuration) the same way: each placed at file:line:col,
// named by its key, saying what was found and what to write instead, and
// all of a file's problems at once.
package yamlerr

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is one problem in a YAML file, placed where an editor can jump
// to it.
type Error struct {
	File   string // "" for settings that came from flags, or bytes without a name
	Line   int    // 1-based; 0 when the problem has no place in the file
	Column int
	Key    string // the key whose value is wrong, e.g. "sizes" or "mesh.labels"; may be empty
	Msg    string // what is wrong; what is allowed
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%d", e.Line)
		// The YAML parser places syntax errors by line only.
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	// A problem in flags has no file to name.
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// List holds every problem found in one file, so that one check shows
// them all instead of one per edit.
type List []*Error

func (l List) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual errors.
func (l List) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// MaxErrors bounds a List: past a handful, later errors are usually
// echoes of earlier ones and bury them.
const MaxErrors = 10

// Collector gathers the problems of one file.
type Collector struct {
	File    string
	list    List
	count   int // problems found, including those past MaxErrors
	dropped bool
}

// Add records e, unless MaxErrors are already recorded.
func (c *Collector) Add(e *Error) {
	c.count++
	if len(c.list) >= MaxErrors {
		c.dropped = true
		return
	}
	c.list = append(c.list, e)
}

// At records a problem at n (nil: no place in the file) in the value of key.
func (c *Collector) At(n *yaml.Node, key, format string, args ...any) {
	e := &Error{File: c.File, Key: key, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	c.Add(e)
}

// Count is the number of problems found so far, including those past
// MaxErrors: a caller compares it before and after reading a value to
// learn whether that value was bad.
func (c *Collector) Count() int { return c.count }

// Err returns the problems in file order, or nil when there are none.
func (c *Collector) Err() error {
	if len(c.list) == 0 {
		return nil
	}
	sort.SliceStable(c.list, func(i, j int) bool {
		a, b := c.list[i], c.list[j]
		return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
	})
	if c.dropped {
		c.list = append(c.list, &Error{File: c.File, Msg: "too many errors; fix these and check again"})
		c.dropped = false
	}
	return c.list
}
