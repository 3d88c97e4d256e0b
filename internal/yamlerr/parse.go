package yamlerr

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse reads the one YAML document data holds and returns its top node.
// It returns nil when data holds no document (an empty file, or only
// comments) and when it is not valid YAML, which it reports to c; c.Count
// tells the two apart.
func Parse(c *Collector, data []byte) *yaml.Node {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			c.syntax(err, data)
		}
		return nil
	}
	// A second document would otherwise be ignored without a word, and
	// with it whatever its author meant it to set.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		c.At(&extra, "", "a second YAML document; the file holds one (remove the ---)")
		return nil
	} else if !errors.Is(err, io.EOF) {
		c.syntax(err, data)
		return nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return &doc
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (c *Collector) syntax(err error, data []byte) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg := "not valid YAML: " + m[2]
		// The parser's words for a tab in the indentation do not say tab.
		if lines := bytes.Split(data, []byte("\n")); line <= len(lines) && bytes.HasPrefix(bytes.TrimLeft(lines[line-1], " "), []byte("\t")) {
			msg += "; the line is indented with a tab, and YAML indents with spaces only"
		}
		// The YAML parser gives no column; 0 leaves it out.
		c.Add(&Error{File: c.File, Line: line, Msg: msg})
		return
	}
	c.Add(&Error{File: c.File, Msg: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
}
