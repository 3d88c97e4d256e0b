package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// where names a check's device and port for people: "host" for the
// host's own checks.
func (c Check) where() string {
	switch {
	case c.Device == "":
		return "host"
	case c.Port == 0:
		return c.Device
	}
	return c.Device + "/" + strconv.Itoa(c.Port)
}

// WriteText prints the report as a table of every check, then the cost
// and the fix of each that is not ok, worst first, then the counts.
func WriteText(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tWHERE\tSTATUS\tFOUND\tEXPECTED")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.where(), c.Status, c.Found, c.Expected)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range []Status{Fail, Warn, CannotTell} {
		for _, c := range r.Checks {
			if c.Status != s || (c.Cost == "" && c.Fix == "") {
				continue
			}
			fmt.Fprintf(w, "\n%s %s (%s): found %s\n", c.Status, c.Name, c.where(), c.Found)
			if c.Cost != "" {
				fmt.Fprintf(w, "  cost: %s\n", c.Cost)
			}
			if c.Fix != "" {
				fmt.Fprintf(w, "  fix:  %s\n", c.Fix)
			}
		}
	}
	n := r.Count()
	_, err := fmt.Fprintf(w, "\n%d fail, %d warn, %d cannot_tell, %d not_applicable, %d ok\n",
		n["fail"], n["warn"], n["cannot_tell"], n["not_applicable"], n["ok"])
	return err
}

// WriteJSON prints the report as indented JSON (schema Schema).
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
