package report

import (
	"encoding/json"
	"io"
)

// JSON writes the report as indented JSON in the Schema layout. Times
// are in nanoseconds and rates in bytes per second, as their field
// names say.
func JSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
