package runner

import (
	"sort"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// Error is one problem in a scenario file, placed where an editor can jump
// to it. It is the exporter configuration's kind of error too, so that
// both files read alike.
type Error = yamlerr.Error

// ErrorList holds every problem found in one file, so that one run of
// `rdmarun validate` shows them all instead of one per edit.
type ErrorList = yamlerr.List

// sortedKeys lists a map's keys in order, for messages that must not
// change from run to run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
