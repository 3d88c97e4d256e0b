package yamlerr

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Schema says how to read a document as a Go type where the type alone
// does not say it.
type Schema struct {
	// As maps a type that decodes itself from YAML of another shape than
	// its fields' (a struct written as a mapping of names) to a type of
	// that shape.
	As map[reflect.Type]reflect.Type
	// Want is the shape of the whole document, as a want tag says a
	// field's ("a list of targets such as ..."); empty: the type's.
	Want string
}

// Check reports to c every place where the YAML value n does not fit t,
// the Go type yaml.v3 is to decode it into: a value of the wrong kind (a
// list for a mapping, a word for a number, a number for a duration), a
// key t has no field for, a key given twice. Each problem is placed at
// its line and column, under its key path (mesh.labels,
// targets.static[2].device_port), with what was found and what to write.
//
// yaml.v3's own report of the same problems names a line and a Go type
// (cannot unmarshal !!seq into map[string]string) and stops at the first
// type that decodes itself, so the caller runs Check first and decodes
// only a document that fits; what decoding then refuses is the types'
// own validation, which knows what the values mean where Check knows only
// their shapes.
//
// A type that decodes itself is read as its fields, unless s.As names
// another type. A field may carry a want tag, the shape of its value as
// the reader should hear it ("a size such as 4KiB"), and a list or
// mapping an item tag, the shape of one element.
//
// Check is stricter than the decoder where the decoder would take a value
// for something else without a word: a list item or mapping value left
// empty (dropped, or decoded as a zero value, not the defaults), a key
// left empty (ignored), a fraction for a whole number (truncated), a
// second merge key (replacing the first). An empty value of a struct's
// key is allowed: it leaves the key's default, as leaving the key out
// does.
func (s Schema) Check(c *Collector, n *yaml.Node, t reflect.Type) {
	k := &checker{c: c, as: s.As, done: map[visit]bool{}, structs: map[reflect.Type]*structInfo{}}
	k.value(n, t, "", hint{want: s.Want}, true)
}

type checker struct {
	c  *Collector
	as map[reflect.Type]reflect.Type
	// done holds the anchored nodes already checked, with the type they
	// were checked as: an anchor used many times (or a billion laughs)
	// is checked, and its problems reported, once.
	done    map[visit]bool
	structs map[reflect.Type]*structInfo
}

type visit struct {
	n *yaml.Node
	t reflect.Type
}

// hint is what a field's tags say of its value's shape.
type hint struct{ want, item string }

type field struct {
	t    reflect.Type
	hint hint
}

type structInfo struct {
	fields map[string]field
	keys   []string // in the order of the fields, for messages
}

var durationType = reflect.TypeFor[time.Duration]()

// value checks n as a t. nullOK is set where an empty value means the
// default: the value of a struct's key, and the whole document.
func (k *checker) value(n *yaml.Node, t reflect.Type, key string, h hint, nullOK bool) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return // the parser refuses an unknown alias before this
		}
		n = n.Alias
	}
	t = k.shape(t)
	if kind := t.Kind(); !leaf(t) && kind != reflect.Struct && kind != reflect.Map && kind != reflect.Slice {
		// An interface takes any shape, so there would be nothing to
		// check; the project's config types have none.
		panic(fmt.Sprintf("yamlerr: cannot check %v", t))
	}
	if n.Anchor != "" {
		v := visit{n, t}
		if k.done[v] {
			return
		}
		k.done[v] = true
	}
	if IsNull(n) {
		if !nullOK {
			k.mismatch(n, t, key, h)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		k.structure(n, t, key, h)
	case reflect.Map:
		k.mapping(n, t, key, h)
	case reflect.Slice:
		k.list(n, t, key, h)
	default:
		k.scalar(n, t, key, h)
	}
}

// shape is the type whose shape a t's YAML has: the type as names, and
// a pointer's element, since a pointer only tells an absent key apart.
func (k *checker) shape(t reflect.Type) reflect.Type {
	for {
		if s, ok := k.as[t]; ok {
			t = s
			continue
		}
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
			continue
		}
		return t
	}
}

func (k *checker) structure(n *yaml.Node, t reflect.Type, key string, h hint) {
	if n.Kind != yaml.MappingNode {
		k.mismatch(n, t, key, h)
		return
	}
	info := k.info(t)
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if isMerge(kn) {
			k.merge(kn, vn, t, key, h, seen)
			continue
		}
		name, ok := k.key(kn, key, seen)
		if !ok {
			continue
		}
		f, ok := info.fields[name]
		if !ok {
			k.c.At(Resolve(kn), key, "%s", UnknownKey(name, info.keys))
			continue
		}
		k.value(vn, f.t, join(key, name), f.hint, true)
	}
}

func (k *checker) mapping(n *yaml.Node, t reflect.Type, key string, h hint) {
	if t.Key().Kind() != reflect.String {
		panic(fmt.Sprintf("yamlerr: cannot check %v: only string keys", t))
	}
	if n.Kind != yaml.MappingNode {
		k.mismatch(n, t, key, h)
		return
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if isMerge(kn) {
			k.merge(kn, vn, t, key, h, seen)
			continue
		}
		if name, ok := k.key(kn, key, seen); ok {
			k.value(vn, t.Elem(), join(key, name), hint{want: h.item}, false)
		}
	}
}

func (k *checker) list(n *yaml.Node, t reflect.Type, key string, h hint) {
	if n.Kind != yaml.SequenceNode {
		k.mismatch(n, t, key, h)
		return
	}
	for i, item := range n.Content {
		k.value(item, t.Elem(), fmt.Sprintf("%s[%d]", key, i), hint{want: h.item}, false)
	}
}

func (k *checker) scalar(n *yaml.Node, t reflect.Type, key string, h hint) {
	if n.Kind != yaml.ScalarNode || !fits(n, t) {
		k.mismatch(n, t, key, h)
	}
}

// fits reports whether the scalar n decodes into a t, asking the decoder
// itself so that the two cannot disagree, except that a whole number
// must be written as one.
func fits(n *yaml.Node, t reflect.Type) bool {
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return n.ShortTag() != "!!float"
	}
	return true
}

// key reads the key node of a mapping's pair, refusing one that is not
// a name or that the mapping already holds.
func (k *checker) key(kn *yaml.Node, key string, seen map[string]*yaml.Node) (string, bool) {
	kn = Resolve(kn)
	if kn.Kind != yaml.ScalarNode || IsNull(kn) {
		k.c.At(kn, key, "a key must be a name, not %s", Describe(kn))
		return "", false
	}
	name := kn.Value
	if first, dup := seen[name]; dup {
		k.c.At(kn, join(key, name), "given twice (first at line %d); keep one", first.Line)
		return "", false
	}
	seen[name] = kn
	return name, true
}

// merge checks the value of a merge key (<<: *defaults), which the
// decoder reads as more of the mapping it is in. seen holds the
// mapping's keys; a merge is one of them, since a second would replace
// the first.
func (k *checker) merge(kn, vn *yaml.Node, t reflect.Type, key string, h hint, seen map[string]*yaml.Node) {
	// Not a key's name: a key written "<<" in quotes is one.
	const mergeSeen = "\x00<<"
	if first, dup := seen[mergeSeen]; dup {
		k.c.At(kn, mergeKey(key), "given twice (first at line %d); merge a list of mappings instead, such as <<: [*a, *b]", first.Line)
		return
	}
	seen[mergeSeen] = kn
	m := Resolve(vn)
	switch m.Kind {
	case yaml.MappingNode:
		k.value(vn, t, key, h, false)
		return
	case yaml.SequenceNode:
		for _, item := range m.Content {
			if Resolve(item).Kind != yaml.MappingNode {
				k.c.At(Resolve(item), mergeKey(key), "want a mapping to merge, such as *defaults, not %s", Describe(item))
				continue
			}
			k.value(item, t, key, h, false)
		}
		return
	}
	k.c.At(m, mergeKey(key), "want a mapping to merge, such as <<: *defaults, or a list of them, not %s", Describe(m))
}

func isMerge(kn *yaml.Node) bool {
	return kn.Kind == yaml.ScalarNode && kn.Value == "<<" && kn.ShortTag() == "!!merge"
}

func mergeKey(key string) string {
	if key == "" {
		return "<<"
	}
	return key + ".<<"
}

// mismatch reports that n is not a t: what was wanted, what was found,
// and the fix when it is a likely one.
func (k *checker) mismatch(n *yaml.Node, t reflect.Type, key string, h hint) {
	n = Resolve(n)
	msg := "want " + k.want(t, h) + ", not " + Describe(n)
	switch {
	case IsNull(n) && t.Kind() == reflect.Struct:
		msg += "; write {} for every default"
	case n.Kind != yaml.ScalarNode || IsNull(n):
	case t == durationType && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float"):
		msg += "; give it a unit, such as " + n.Value + "s"
	case t.Kind() == reflect.Slice && leaf(k.shape(t.Elem())) && fits(n, k.shape(t.Elem())):
		msg += "; for a list of one, write [" + n.Value + "]"
	}
	k.c.At(n, key, "%s", msg)
}

// leaf reports whether a t is written as one scalar.
func leaf(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// want names the shape of a t.
func (k *checker) want(t reflect.Type, h hint) string {
	if h.want != "" {
		return h.want
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t == durationType {
			return "a duration such as 5s"
		}
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a single value"
	case reflect.Struct:
		return Keys(k.info(t).keys)
	case reflect.Map:
		return "a mapping of names to values"
	}
	return "a list"
}

// info lists the keys of a struct as yaml.v3 names them: the yaml tag's
// name, else the field's name in lower case; inline fields add theirs.
func (k *checker) info(t reflect.Type) *structInfo {
	if s, ok := k.structs[t]; ok {
		return s
	}
	s := &structInfo{fields: map[string]field{}}
	addFields(s, t)
	k.structs[t] = s
	return s
}

func addFields(s *structInfo, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(flags, ","), "inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct {
				panic(fmt.Sprintf("yamlerr: cannot check %v: inline %v", t, f.Type))
			}
			addFields(s, ft)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		s.fields[name] = field{t: f.Type, hint: hint{want: f.Tag.Get("want"), item: f.Tag.Get("item")}}
		s.keys = append(s.keys, name)
	}
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// join adds a key to a path; a key that could be mistaken for more of
// the path (a dot, a bracket, a space) is quoted.
func join(path, name string) string {
	if !plainKey.MatchString(name) {
		name = strconv.Quote(name)
	}
	if path == "" {
		return name
	}
	return path + "." + name
}
