package exposition

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Kind is what a family's series hold.
type Kind int

const (
	KindCounter Kind = iota
	KindGauge
	KindHistogram
)

func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	case KindHistogram:
		return "histogram"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Family is one metric family of a Set. A Set's families are named by
// their index in the list given to New.
type Family struct {
	Name, Help string
	Kind       Kind
	// Label is the label the family's series have beyond the set's (a
	// completion status, a result), "" for none: a key then has one
	// series of the family per value. Only a counter or a gauge has one.
	Label string
	// Buckets are a histogram's classic upper bounds, ascending; +Inf
	// follows them. Its native buckets are the engine's (histogram.go).
	Buckets []float64
}

// Labels are the labels every series of a Set has: their names, and
// how a key gives their values, in the same order.
type Labels[K comparable] struct {
	Names  []string
	Values func(K) []string
	// PerKey names the labels whose values come and go with the keys (a
	// target's address). Their label pairs are kept with the key's series
	// and go when it is forgotten; every other label's values come from
	// a bounded list (a config, a fixed set), and their pairs are kept
	// once for all the series that have them.
	PerKey []string
}

// Set holds the series of some families for every key, and writes them:
// to a registry as a Collector (Collect), and in the text and protobuf
// formats to a scrape (Handler). Its updates (Update, Forget) are
// atomic over a key's series; histograms have locks of their own, so
// that samples are observed without holding up a scrape.
type Set[K comparable] struct {
	*core
	keyValues func(K) []string
	series    map[K]*series
}

// core is the part of a Set that does not depend on its key type: all
// that a scrape and a registry read.
type core struct {
	labelNames []string
	perKey     []bool // by label, see Labels.PerKey
	families   []family
	// How many families keep their series in each of series' lists.
	scalars, labelled, histograms int
	// exposeOrder is the families by name, the order in which a registry
	// gathers them and Handler merges them with the registry's own.
	exposeOrder []int

	mu    sync.Mutex
	all   iter.Seq[*series] // every key's series, in no order
	pairs map[[2]string]*dto.LabelPair
	// extras are the families' own labels with each value, as a scrape
	// writes them, shared by every key's series.
	extras map[[2]string]*renderedLabel
	// order is every series of every family in the order the registry
	// sorts them, rebuilt only after a series comes or goes.
	order   [][]seriesRef
	ordered bool
}

// family is a Family with what the set derives from it once.
type family struct {
	Family
	desc *prometheus.Desc
	// extraAt is, for a family with a label of its own, how many of the
	// set's labels sort before it: where it goes in a key's sorted label
	// pairs and in renderedLabels.
	extraAt int
	// at is where a key's series of the family are in series.values,
	// series.labelled or series.histograms, by the family's shape.
	at   int
	expo familyExposition
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// New makes an empty Set of families whose series have labels. It
// checks what the encoders rely on: names they can write unquoted,
// labels that do not clash, and a family's own label sorting after the
// first of the set's, since it is written into their rendered list
// after a comma.
func New[K comparable](labels Labels[K], families []Family) (*Set[K], error) {
	if labels.Values == nil {
		return nil, fmt.Errorf("exposition: Labels.Values is nil: a Set needs the label values of its keys")
	}
	if len(labels.Names) == 0 {
		return nil, fmt.Errorf("exposition: Labels.Names is empty: a Set's series need at least one label")
	}
	c := &core{labelNames: slices.Clone(labels.Names), perKey: make([]bool, len(labels.Names)),
		pairs: map[[2]string]*dto.LabelPair{}, extras: map[[2]string]*renderedLabel{},
		order: make([][]seriesRef, len(families))}
	for i, n := range c.labelNames {
		if !labelName.MatchString(n) || n == "le" {
			return nil, fmt.Errorf("exposition: label %q (Labels.Names[%d]) is not a label name the text format writes unquoted, or is le, which histograms use", n, i)
		}
		if slices.Contains(c.labelNames[:i], n) {
			return nil, fmt.Errorf("exposition: label %q is named twice in Labels.Names", n)
		}
	}
	for _, n := range labels.PerKey {
		i := slices.Index(c.labelNames, n)
		if i < 0 {
			return nil, fmt.Errorf("exposition: Labels.PerKey names %q, which is not in Labels.Names %v", n, c.labelNames)
		}
		c.perKey[i] = true
	}
	first := slices.Min(c.labelNames)
	for f, d := range families {
		where := fmt.Sprintf("exposition: family %d (%s)", f, d.Name)
		switch {
		case !metricName.MatchString(d.Name):
			return nil, fmt.Errorf("%s: not a metric name the text format writes unquoted", where)
		case slices.ContainsFunc(families[:f], func(o Family) bool { return o.Name == d.Name }):
			return nil, fmt.Errorf("%s: the name is taken by an earlier family", where)
		case d.Kind != KindCounter && d.Kind != KindGauge && d.Kind != KindHistogram:
			return nil, fmt.Errorf("%s: kind %v is none of counter, gauge, histogram", where, d.Kind)
		case d.Kind == KindHistogram && d.Label != "":
			return nil, fmt.Errorf("%s: a histogram has no label of its own (%q); give it a family per value", where, d.Label)
		case d.Kind == KindHistogram && !validBuckets(d.Buckets):
			return nil, fmt.Errorf("%s: Buckets %v: a histogram needs finite upper bounds, strictly ascending (+Inf follows them)", where, d.Buckets)
		case d.Kind != KindHistogram && len(d.Buckets) > 0:
			return nil, fmt.Errorf("%s: Buckets are for histograms, not a %v", where, d.Kind)
		case d.Label != "" && (!labelName.MatchString(d.Label) || slices.Contains(c.labelNames, d.Label)):
			return nil, fmt.Errorf("%s: label %q is not a label name, or is one of the set's %v", where, d.Label, c.labelNames)
		case d.Label != "" && d.Label < first:
			return nil, fmt.Errorf("%s: label %q sorts before every label of the set (%v); rename it to sort after %q", where, d.Label, c.labelNames, first)
		}
		names := c.labelNames
		if d.Label != "" {
			names = append(slices.Clip(names), d.Label)
		}
		fam := family{Family: d, desc: prometheus.NewDesc(d.Name, d.Help, names, nil)}
		fam.Buckets = slices.Clone(d.Buckets)
		for _, n := range c.labelNames {
			if d.Label != "" && n < d.Label {
				fam.extraAt++
			}
		}
		fam.expo = newFamilyExposition(&fam.Family)
		switch {
		case d.Kind == KindHistogram:
			fam.at = c.histograms
			c.histograms++
		case d.Label != "":
			fam.at = c.labelled
			c.labelled++
		default:
			fam.at = c.scalars
			c.scalars++
		}
		c.families = append(c.families, fam)
	}
	c.exposeOrder = make([]int, len(c.families))
	for f := range c.exposeOrder {
		c.exposeOrder[f] = f
	}
	slices.SortFunc(c.exposeOrder, func(a, b int) int { return cmp.Compare(c.families[a].Name, c.families[b].Name) })
	s := &Set[K]{core: c, keyValues: labels.Values, series: map[K]*series{}}
	c.all = maps.Values(s.series)
	return s, nil
}

func validBuckets(b []float64) bool {
	for i, ub := range b {
		if math.IsNaN(ub) || math.IsInf(ub, 0) || i > 0 && ub <= b[i-1] {
			return false
		}
	}
	return len(b) > 0
}

// Desc is family f's description, as Describe sends it.
func (c *core) Desc(f int) *prometheus.Desc { return c.families[f].desc }

// series holds every series of one key. Its label pairs are built once,
// sorted by name as the registry wants them, and shared by every scrape,
// which only reads them.
type series struct {
	labels  []*dto.LabelPair       // sorted by name
	created *timestamppb.Timestamp // when the counters started at 0
	// rendered and createdProto are labels and created as the scrape
	// writes them (encode.go), rendered once for the series' life.
	rendered     *renderedLabels
	createdProto string
	// The series of each family, at its family.at: a plain counter's or
	// gauge's, a family's by its own label, a histogram. Kept apart by
	// shape so that a key holds only what its families can have.
	values     []value
	labelled   [][]labelledValue
	histograms []*Histogram
}

// value is a counter's or gauge's series; on is whether it exists (an
// update created it).
type value struct {
	v  float64
	on bool
}

// labelledValue is one series of a family with a label of its own, its
// label pairs built once.
type labelledValue struct {
	value    string
	labels   []*dto.LabelPair
	rendered *renderedLabel // value as the scrape writes it (encode.go)
	v        float64
}

// seriesOf is k's series, created empty. c.mu is held.
func (s *Set[K]) seriesOf(k K) *series {
	if ps, ok := s.series[k]; ok {
		return ps
	}
	v := s.keyValues(k)
	if len(v) != len(s.labelNames) {
		panic(fmt.Sprintf("exposition: Labels.Values gave %d values for the %d labels %v", len(v), len(s.labelNames), s.labelNames))
	}
	ps := s.newSeries(v)
	s.series[k] = ps
	return ps
}

// newSeries makes a key's series, with the key's label values. The pairs
// of the PerKey labels are the series' own and go with it. The others
// are shared by every series that has them: their values come from a
// config or from fixed lists, so there are a few dozen of them whatever
// the number of keys, and a scrape, which reads every pair of every
// series, finds them in the cache instead of one apiece all over the
// heap. c.mu is held.
func (c *core) newSeries(values []string) *series {
	ps := &series{created: timestamppb.Now(),
		values: make([]value, c.scalars), labelled: make([][]labelledValue, c.labelled), histograms: make([]*Histogram, c.histograms)}
	ps.labels = make([]*dto.LabelPair, len(values))
	for i := range values {
		if c.perKey[i] {
			own := values[i]
			ps.labels[i] = &dto.LabelPair{Name: &c.labelNames[i], Value: &own}
		} else {
			ps.labels[i] = c.pair(&c.labelNames[i], values[i])
		}
	}
	slices.SortFunc(ps.labels, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
	ps.rendered = renderLabels(ps.labels)
	ps.createdProto = string(appendCounterCreated(nil, ps.created))
	return ps
}

// pair is the shared label pair of *name and value. c.mu is held.
func (c *core) pair(name *string, value string) *dto.LabelPair {
	k := [2]string{*name, value}
	lp, ok := c.pairs[k]
	if !ok {
		v := value
		lp = &dto.LabelPair{Name: name, Value: &v}
		c.pairs[k] = lp
	}
	return lp
}

// Update runs fn on k's series, created empty if k has none, under the
// set's lock: a scrape sees all of fn's changes or none. fn must not
// call the set.
func (s *Set[K]) Update(k K, fn func(Series)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(Series{c: s.core, s: s.seriesOf(k)})
}

// Forget deletes every series of k, so that a key no longer probed
// disappears from a scrape instead of showing its last values forever.
// It returns how many series went.
func (s *Set[K]) Forget(k K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.series[k]
	if !ok {
		return 0
	}
	delete(s.series, k)
	s.ordered = false
	n := 0
	for _, v := range ps.values {
		if v.on {
			n++
		}
	}
	for _, l := range ps.labelled {
		n += len(l)
	}
	for _, h := range ps.histograms {
		if h != nil {
			n++
		}
	}
	return n
}

// Series is one key's series during an Update. Each method creates the
// series it names if it does not exist; adding 0 creates a series
// without changing one that exists. A method used on a family of
// another shape (Add on a histogram, Add on a family with a label of
// its own) panics: the families are the caller's code.
type Series struct {
	c *core
	s *series
}

// Add adds v to family f's series.
func (u Series) Add(f int, v float64) { u.scalar(f, "Add").v += v }

// Set sets family f's series to v.
func (u Series) Set(f int, v float64) { u.scalar(f, "Set").v = v }

// AddLabelled adds v to the series of family f whose own label is value.
func (u Series) AddLabelled(f int, value string, v float64) {
	fam := &u.c.families[f]
	if fam.Label == "" {
		panic("exposition: AddLabelled on " + fam.Name + ", which has no label of its own")
	}
	list := &u.s.labelled[fam.at]
	for i := range *list {
		if (*list)[i].value == value {
			(*list)[i].v += v
			return
		}
	}
	c := u.c
	extra, ok := c.extras[[2]string{fam.Label, value}]
	if !ok {
		extra = renderLabel(fam.Label, value)
		c.extras[[2]string{fam.Label, value}] = extra
	}
	// The key's pairs, sorted by name, with the family's own where it
	// sorts among them.
	keyPairs := u.s.labels
	lps := make([]*dto.LabelPair, 0, len(keyPairs)+1)
	lps = append(lps, keyPairs[:fam.extraAt]...)
	lps = append(lps, c.pair(&fam.Label, value))
	lps = append(lps, keyPairs[fam.extraAt:]...)
	*list = append(*list, labelledValue{value: value, labels: lps, rendered: extra, v: v})
	c.ordered = false
}

// Histogram is family f's histogram, created empty. Its samples are
// observed after the Update, under the histogram's own lock.
func (u Series) Histogram(f int) *Histogram {
	fam := &u.c.families[f]
	if fam.Kind != KindHistogram {
		panic("exposition: Histogram on " + fam.Name + ", a " + fam.Kind.String())
	}
	h := &u.s.histograms[fam.at]
	if *h == nil {
		*h = newHistogram(fam.Buckets, time.Now())
		u.c.ordered = false
	}
	return *h
}

func (u Series) scalar(f int, method string) *value {
	fam := &u.c.families[f]
	if fam.Kind == KindHistogram || fam.Label != "" {
		panic("exposition: " + method + " on " + fam.Name + ": use Histogram or AddLabelled")
	}
	v := &u.s.values[fam.at]
	if !v.on {
		v.on = true
		u.c.ordered = false
	}
	return v
}

// seriesRef names one series of a family: a key's, and for a family with
// a label of its own, which of its values.
type seriesRef struct {
	s *series
	i int
}

// labels points at the series' label pairs, which stay as they are for
// the life of the series, so a scrape may read them after c.mu is
// released (an append that moves the list leaves the old copy as it was).
func (r seriesRef) labels(fam *family) *[]*dto.LabelPair {
	if fam.Label != "" {
		return &r.s.labelled[fam.at][r.i].labels
	}
	return &r.s.labels
}

// value is the counter's or gauge's value of the series.
func (r seriesRef) value(fam *family) float64 {
	if fam.Label != "" {
		return r.s.labelled[fam.at][r.i].v
	}
	return r.s.values[fam.at].v
}

// histogram is the histogram of the series.
func (r seriesRef) histogram(fam *family) *Histogram { return r.s.histograms[fam.at] }

// sortSeries lists every series of every family in the registry's order:
// by label values, compared in the order of the label names. c.mu is held.
func (c *core) sortSeries() {
	for f := range c.order {
		fam := &c.families[f]
		refs := c.order[f][:0]
		for s := range c.all {
			switch {
			case fam.Kind == KindHistogram:
				if s.histograms[fam.at] != nil {
					refs = append(refs, seriesRef{s: s})
				}
			case fam.Label != "":
				for i := range s.labelled[fam.at] {
					refs = append(refs, seriesRef{s: s, i: i})
				}
			case s.values[fam.at].on:
				refs = append(refs, seriesRef{s: s})
			}
		}
		slices.SortFunc(refs, func(a, b seriesRef) int {
			la, lb := *a.labels(fam), *b.labels(fam)
			for i := range la {
				if c := cmp.Compare(la[i].GetValue(), lb[i].GetValue()); c != 0 {
					return c
				}
			}
			return 0
		})
		clear(refs[len(refs):cap(refs)]) // let forgotten series go
		c.order[f] = refs
	}
	c.ordered = true
}
