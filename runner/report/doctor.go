package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmarun/rdmarun/doctor"
)

// DoctorEnd is the doctor's findings on one end of a scenario whose
// threshold failed: what on that host may explain it. Only the checks
// that are not fine are kept (warn, fail, cannot_tell), so a report
// stays short; the counts say how many were.
type DoctorEnd struct {
	// Host is "local" for this host, else the responder's HOST:PORT.
	Host    string   `json:"host"`
	Devices []string `json:"devices"`
	// Error says why this end's doctor could not be asked (an older
	// responder, one that went away); the counts are then 0.
	Error         string         `json:"error,omitempty"`
	OK            int            `json:"ok"`
	NotApplicable int            `json:"not_applicable"`
	Findings      []doctor.Check `json:"findings"`
}

// NewDoctorEnd keeps r's checks at warn, fail or cannot_tell, worst
// first, and counts the others.
func NewDoctorEnd(host string, r doctor.Report) DoctorEnd {
	e := DoctorEnd{Host: host, Devices: r.Devices, Findings: []doctor.Check{}}
	for _, s := range []doctor.Status{doctor.Fail, doctor.Warn, doctor.CannotTell} {
		for _, c := range r.Checks {
			if c.Status == s {
				e.Findings = append(e.Findings, c)
			}
		}
	}
	for _, c := range r.Checks {
		switch c.Status {
		case doctor.OK:
			e.OK++
		case doctor.NotApplicable:
			e.NotApplicable++
		}
	}
	return e
}

// DoctorEndError is an end whose doctor could not be asked.
func DoctorEndError(host string, err error) DoctorEnd {
	return DoctorEnd{Host: host, Devices: []string{}, Error: err.Error(), Findings: []doctor.Check{}}
}

// title names the end and counts its checks, for every writer.
func (e DoctorEnd) title() string {
	if e.Error != "" {
		return fmt.Sprintf("%s: the doctor could not be asked: %s", e.Host, e.Error)
	}
	return fmt.Sprintf("%s (%s): %d findings, %d ok, %d not applicable",
		e.Host, strings.Join(e.Devices, ", "), len(e.Findings), e.OK, e.NotApplicable)
}

func checkWhere(c doctor.Check) string {
	switch {
	case c.Device == "":
		return "host"
	case c.Port == 0:
		return c.Device
	}
	return c.Device + "/" + strconv.Itoa(c.Port)
}

// doctorText writes the findings of both ends, each line starting with
// indent: the text report's section and a failing JUnit testcase's
// system-out.
func doctorText(w io.Writer, ends []DoctorEnd, indent string) {
	for _, e := range ends {
		fmt.Fprintf(w, "%s%s\n", indent, e.title())
		for _, c := range e.Findings {
			fmt.Fprintf(w, "%s  %s %s (%s): found %s; expected %s\n", indent, c.Status, c.Name, checkWhere(c), c.Found, c.Expected)
			if c.Cost != "" {
				fmt.Fprintf(w, "%s    cost: %s\n", indent, c.Cost)
			}
			if c.Fix != "" {
				fmt.Fprintf(w, "%s    fix:  %s\n", indent, c.Fix)
			}
		}
	}
}
