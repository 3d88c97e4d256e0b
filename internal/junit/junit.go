// Package junit writes JUnit XML for rdmarun's reports and comparisons.
package junit

import (
	"encoding/xml"
	"io"
)

// The types are written here rather than taken from a JUnit library: each
// testcase carries its own properties (the settings and measured values),
// which the common library types do not allow.

// Suites is the document's root.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one testsuite.
type Suite struct {
	Name      string     `xml:"name,attr"`
	Tests     int        `xml:"tests,attr"`
	Failures  int        `xml:"failures,attr"`
	Errors    int        `xml:"errors,attr"`
	Skipped   int        `xml:"skipped,attr"`
	Time      string     `xml:"time,attr"`
	Timestamp string     `xml:"timestamp,attr"`
	Props     []Property `xml:"properties>property,omitempty"`
	Cases     []Case     `xml:"testcase"`
	SystemOut string     `xml:"system-out,omitempty"`
}

// Case is one testcase: at most one of Failure, Error and Skipped.
type Case struct {
	Name      string     `xml:"name,attr"`
	Classname string     `xml:"classname,attr"`
	Time      string     `xml:"time,attr"`
	Props     []Property `xml:"properties>property,omitempty"`
	Failure   *Result    `xml:"failure,omitempty"`
	Error     *Result    `xml:"error,omitempty"`
	Skipped   *Result    `xml:"skipped,omitempty"`
	SystemOut string     `xml:"system-out,omitempty"`
}

// Property is a name and value of a suite or case.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Result is a failure, error or skip: its message, type and text.
type Result struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// Write writes the XML declaration and the suites, indented.
func Write(w io.Writer, s Suites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
