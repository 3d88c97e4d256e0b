package yamlerr

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// sample has a field of every shape Check reads.
type sample struct {
	Name    string            `yaml:"name"`
	Count   int               `yaml:"count"`
	Small   uint8             `yaml:"small"`
	Ratio   float64           `yaml:"ratio"`
	Enabled bool              `yaml:"enabled"`
	Every   time.Duration     `yaml:"every"`
	Size    string            `yaml:"size" want:"a size such as 4KiB"`
	Sizes   []string          `yaml:"sizes" want:"a list of sizes such as [2, 4KiB]" item:"a size such as 4KiB"`
	Labels  map[string]string `yaml:"labels" want:"a mapping of label name to value, such as labels: {rack: r1}" item:"a label value such as r1"`
	Inner   *inner            `yaml:"inner"`
	Items   []inner           `yaml:"items"`
	ByName  map[string]inner  `yaml:"by_name"`
	Tags    tags              `yaml:"tags"`
	Ports   []int             `yaml:"ports"`
	Extra   `yaml:",inline"`
	Upper   int // named upper, as yaml.v3 names it
	Skipped int `yaml:"-"`
	//lint:ignore U1000 never set: it is here to be skipped as yaml.v3 skips it
	hidden int
}

type inner struct {
	Addr  string         `yaml:"addr"`
	Every *time.Duration `yaml:"every"`
}

// Extra is inlined: its keys are sample's.
type Extra struct {
	Note string `yaml:"note"`
}

// tags decodes itself from a mapping, as config.Labels does.
type tags struct{ m map[string]string }

func (t *tags) UnmarshalYAML(unmarshal func(any) error) error { return unmarshal(&t.m) }

var sampleSchema = Schema{As: map[reflect.Type]reflect.Type{reflect.TypeFor[tags](): reflect.TypeFor[map[string]string]()}}

func check(data string) error {
	c := &Collector{File: "f.yml"}
	if n := Parse(c, []byte(data)); n != nil {
		sampleSchema.Check(c, n, reflect.TypeFor[sample]())
	}
	return c.Err()
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"fits", "name: a\ncount: 0x10\nsmall: 255\nratio: 1\nenabled: yes\nevery: 1m30s\nsize: 4KiB\nsizes: [2, 4KiB]\nlabels: {rack: r1}\n" +
			"inner: {addr: h:1, every: 5s}\nitems: [{addr: a}]\nby_name: {x: {addr: b}}\ntags: {a: b}\nports: [1, 2]\nnote: n\nupper: 1\n", ""},
		{"empty values keep defaults", "name:\ninner:\nsizes: ~\n", ""},
		{"empty document", "# nothing\n", ""},
		{"null document", "~\n", ""},
		{"top level not a mapping", "- a\n", `f.yml:1:1: want a mapping of keys (name, count, small, ratio, enabled, every, ...), not a list`},
		{"unknown key", "nmae: a\n", `f.yml:1:1: unknown key "nmae"; did you mean "name"?`},
		{"unknown key, nothing close", "inner: {zzz: 1}\n", `f.yml:1:9: inner: unknown key "zzz"; allowed here: addr, every`},
		{"skipped and hidden fields are not keys", "skipped: 1\nhidden: 2\n", "f.yml:1:1: unknown key \"skipped\"; allowed here: name, count, small, ratio, enabled, every, size, sizes, labels, inner, items, by_name, tags, ports, note, upper\n" +
			`f.yml:2:1: unknown key "hidden"; allowed here: name, count, small, ratio, enabled, every, size, sizes, labels, inner, items, by_name, tags, ports, note, upper`},
		{"key twice", "name: a\nname: b\n", `f.yml:2:1: name: given twice (first at line 1); keep one`},
		{"map key twice", "labels: {a: b, a: c}\n", `f.yml:1:16: labels.a: given twice (first at line 1); keep one`},
		{"key not a name", "? [a]\n: 1\n", `f.yml:1:3: a key must be a name, not a list`},
		{"empty key", "labels: {~: b}\n", `f.yml:1:10: labels: a key must be a name, not nothing`},
		{"string given a list", "name: [a]\n", `f.yml:1:7: name: want a single value, not a list`},
		{"int given a word", "count: many\n", `f.yml:1:8: count: want a whole number, not "many"`},
		{"int given a fraction", "count: 1.5\n", `f.yml:1:8: count: want a whole number, not "1.5"`},
		{"uint out of range", "small: 256\n", `f.yml:1:8: small: want a whole number, 0 or more, not "256"`},
		{"float given a word", "ratio: half\n", `f.yml:1:8: ratio: want a number, not "half"`},
		{"bool given a word", "enabled: yes-please\n", `f.yml:1:10: enabled: want true or false, not "yes-please"`},
		{"duration without unit", "every: 15\n", `f.yml:1:8: every: want a duration such as 5s, not "15"; give it a unit, such as 15s`},
		{"duration given a word", "every: often\n", `f.yml:1:8: every: want a duration such as 5s, not "often"`},
		{"duration in a pointer", "inner: {every: [1s]}\n", `f.yml:1:16: inner.every: want a duration such as 5s, not a list`},
		{"size given a mapping", "size: {n: 4}\n", `f.yml:1:7: size: want a size such as 4KiB, not a mapping`},
		{"list given a scalar", "sizes: 4KiB\n", `f.yml:1:8: sizes: want a list of sizes such as [2, 4KiB], not "4KiB"; for a list of one, write [4KiB]`},
		{"list of numbers given a word", "ports: http\n", `f.yml:1:8: ports: want a list, not "http"`},
		{"list item", "sizes: [2, [4]]\n", `f.yml:1:12: sizes[1]: want a size such as 4KiB, not a list`},
		{"empty list item", "sizes: [2, ~]\n", `f.yml:1:12: sizes[1]: want a size such as 4KiB, not nothing`},
		{"map given a list", "labels: [rack]\n", `f.yml:1:9: labels: want a mapping of label name to value, such as labels: {rack: r1}, not a list`},
		{"map value", "labels: {rack: [r1]}\n", `f.yml:1:16: labels.rack: want a label value such as r1, not a list`},
		{"map value empty", "labels: {rack: }\n", `f.yml:1:16: labels.rack: want a label value such as r1, not nothing`},
		{"self-decoding type", "tags: [a]\n", `f.yml:1:7: tags: want a mapping of names to values, not a list`},
		{"struct given a scalar", "inner: h:1\n", `f.yml:1:8: inner: want a mapping of keys (addr, every), not "h:1"`},
		{"struct in a list", "items: [{addr: a}, {adr: b}]\n", `f.yml:1:21: items[1]: unknown key "adr"; did you mean "addr"?`},
		{"empty struct in a list", "items: [~]\n", `f.yml:1:9: items[0]: want a mapping of keys (addr, every), not nothing; write {} for every default`},
		{"struct in a map", "by_name: {x: {addr: [a]}, 'a.b': 1}\n", "f.yml:1:21: by_name.x.addr: want a single value, not a list\n" +
			`f.yml:1:34: by_name."a.b": want a mapping of keys (addr, every), not "1"`},
		{"inline key", "note: [a]\n", `f.yml:1:7: note: want a single value, not a list`},
		{"anchor checked once", "inner: &i {addr: [x]}\nitems: [*i, *i]\n", `f.yml:1:18: inner.addr: want a single value, not a list`},
		{"anchor as another type", "name: &n [x]\nsizes: *n\n", "f.yml:1:7: name: want a single value, not a list"},
		{"merge", "inner: {<<: {addr: a, evry: 1s}, every: 2s}\n", `f.yml:1:23: inner: unknown key "evry"; did you mean "every"?`},
		{"merge list", "inner: {<<: [{addr: a}, {evry: 1s}]}\n", `f.yml:1:26: inner: unknown key "evry"; did you mean "every"?`},
		{"merge of a scalar", "inner: {<<: x}\n", `f.yml:1:13: inner.<<: want a mapping to merge, such as <<: *defaults, or a list of them, not "x"`},
		{"merge list of scalars", "inner: {<<: [{addr: a}, x]}\n", `f.yml:1:25: inner.<<: want a mapping to merge, such as *defaults, not "x"`},
		{"merge twice", "inner: {<<: {addr: a}, <<: {addr: b}}\n", `f.yml:1:24: inner.<<: given twice (first at line 1); merge a list of mappings instead, such as <<: [*a, *b]`},
		{"several, in file order", "count: x\nname: [a]\nnmae: b\n", "f.yml:1:8: count: want a whole number, not \"x\"\n" +
			"f.yml:2:7: name: want a single value, not a list\n" +
			`f.yml:3:1: unknown key "nmae"; did you mean "name"?`},
		{"syntax", "count: 1\nname: a: b\n", `f.yml:2: not valid YAML: mapping values are not allowed in this context`},
		{"tab", "inner:\n\taddr: a\n", `f.yml:2: not valid YAML: found character that cannot start any token; the line is indented with a tab, and YAML indents with spaces only`},
		{"second document", "name: a\n---\nname: b\n", `f.yml:2:1: a second YAML document; the file holds one (remove the ---)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check(tc.in)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Check(%q):\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestCheckWant: the shape of a whole document is the schema's, when
// it says one.
func TestCheckWant(t *testing.T) {
	c := &Collector{File: "f.yml"}
	n := Parse(c, []byte("addr: a\n"))
	Schema{Want: "a list of hosts such as [{addr: a}]"}.Check(c, n, reflect.TypeFor[[]inner]())
	if err, want := c.Err(), "f.yml:1:1: want a list of hosts such as [{addr: a}], not a mapping"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestCheckTooMany: a file full of problems reports MaxErrors of them,
// then says there are more.
func TestCheckTooMany(t *testing.T) {
	var b strings.Builder
	for range MaxErrors + 5 {
		b.WriteString("- {addr: [a]}\n")
	}
	err := check("items:\n" + b.String())
	var list List
	if !errors.As(err, &list) || len(list) != MaxErrors+1 {
		t.Fatalf("got %v, want %d errors and the too-many line", err, MaxErrors)
	}
	if last := list[MaxErrors].Error(); last != "f.yml: too many errors; fix these and check again" {
		t.Errorf("last line %q", last)
	}
}

// TestCheckUnsupported: a type Check cannot read panics on every input,
// so the first test of its caller finds it.
func TestCheckUnsupported(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[struct{ X any }](), reflect.TypeFor[map[int]string](), reflect.TypeFor[struct {
		M map[string]int `yaml:",inline"`
	}]()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Check as %v did not panic", typ)
				}
			}()
			var n yaml.Node
			if err := yaml.Unmarshal([]byte("x: 1\n"), &n); err != nil {
				t.Fatal(err)
			}
			Schema{}.Check(&Collector{}, n.Content[0], typ)
		}()
	}
}

// FuzzCheck: a document Check finds nothing in decodes into the type
// without an error, so a decoder's type error never reaches the reader
// in its place.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"name: a\ncount: 3\nevery: 5s\nsizes: [2, 4KiB]\nlabels: {rack: r1}\ninner: {addr: h:1}\nitems: [{addr: a}]\nby_name: {x: {addr: b}}\ntags: {a: b}\n",
		"inner: &i {addr: a}\nitems: [*i, {<<: *i, every: 1s}]\n",
		"count: 1.5\nsmall: -1\nevery: 15\nlabels: {a: ~}\n",
		"a: &a [*a, *a]\nsizes: *a\n",
		"by_name: {<<: [{x: {}}, {y: {addr: 1}}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if check(string(b)) != nil {
			return
		}
		var s sample
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		// Excessive aliasing is the decoder's guard against a billion
		// laughs, which Check reads once per anchor and cannot judge.
		if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "excessive aliasing") {
			t.Errorf("Check passed %q, but decoding fails: %v", b, err)
		}
	})
}
