package fleet

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// DefaultLagFactor is how many times worse than the fleet median a pair
// must be to lag (lagFactor 0 means this). Healthy pairs of one fabric
// differ by tens of percent (placement, switch hops, clock noise), so 2x
// stays clear of that spread while catching the faults worth a person's
// time: a degraded link, a congested path, a host out of its fast mode.
const DefaultLagFactor = 2.0

// Outcome is one measured pair.
type Outcome struct {
	Pair Pair `json:"pair"`
	// Metric names what Value measures, e.g. "write-latency p99"; medians
	// are taken per metric. Outcomes repeated for the same pair and
	// metric are confirmation runs (see Suspects).
	Metric string `json:"metric"`
	// OK is false when the test failed (a threshold, a completion error).
	OK bool `json:"ok"`
	// Env marks an environment failure: a host did not answer.
	Env bool `json:"env,omitempty"`
	// Setup marks a host's own set-up failing (the locked-memory limit,
	// no device): a finding about that host, reported apart, that
	// judges no pair and blames no one.
	Setup bool `json:"setup,omitempty"`
	// Value is the metric, e.g. p99 latency in seconds or bandwidth in
	// bytes/s; ignored unless OK, finite and above 0.
	Value          float64 `json:"value"`
	HigherIsBetter bool    `json:"higher_is_better,omitempty"`
}

// Status is a pair's verdict, in order of severity.
type Status string

const (
	StatusOK   Status = "ok"
	StatusLag  Status = "lag"  // ran, but LagFactor times worse than the fleet median
	StatusFail Status = "fail" // the test failed
	StatusEnv  Status = "env"  // a host did not answer
)

func (s Status) severity() int {
	return map[Status]int{StatusOK: 0, StatusLag: 1, StatusFail: 2, StatusEnv: 3}[s]
}

// verdict is the judgement of one directed pair on one metric, over its
// repeats.
type verdict struct {
	pair   Pair
	metric string
	status Status
	value  float64 // the worst measured value, 0 if none
	ratio  float64 // value against the median, >1 is worse; 0 if none
	runs   int
	bad    int
}

// judgement holds every verdict and the fleet median of each metric.
type judgement struct {
	verdicts []verdict
	medians  map[string]float64
	higher   map[string]bool
	metrics  []string
}

func measured(o Outcome) bool {
	return o.OK && !o.Env && o.Value > 0 && !math.IsInf(o.Value, 0) && !math.IsNaN(o.Value)
}

// judge checks outcomes against hosts and gives every pair a verdict.
//
// The fleet median of a metric is the median, over NICs, of each NIC's
// best measured pair. A plain median over pairs would follow a slow host:
// it touches N-1 of the N(N-1)/2 pairs, half of them at N=4. A healthy
// NIC's best pair is with another healthy NIC, so the median of bests is
// the healthy speed until half the NICs are slow.
//
// Repeats of one pair and metric are confirmation runs: the pair is bad
// only if every repeat is, so one flaky sample does not blame anyone.
func judge(hosts []Host, outcomes []Outcome, lagFactor float64) (*judgement, error) {
	if lagFactor == 0 {
		lagFactor = DefaultLagFactor
	}
	if lagFactor <= 1 || math.IsNaN(lagFactor) {
		return nil, fmt.Errorf("lag factor %g must be above 1 (0 means %g)", lagFactor, DefaultLagFactor)
	}
	// A host's own set-up failing says nothing about any pair's path.
	outcomes = slices.DeleteFunc(slices.Clone(outcomes), func(o Outcome) bool { return o.Setup })
	j := &judgement{medians: map[string]float64{}, higher: map[string]bool{}}
	best := map[string]map[NIC]float64{}
	for i, o := range outcomes {
		for _, n := range []NIC{o.Pair.A, o.Pair.B} {
			if n.Host < 0 || n.Host >= len(hosts) {
				return nil, fmt.Errorf("outcome %d names host %d, but there are %d hosts", i+1, n.Host, len(hosts))
			}
		}
		if o.Pair.A == o.Pair.B {
			return nil, fmt.Errorf("outcome %d pairs %s with itself", i+1, nicName(hosts, o.Pair.A, true))
		}
		if h, seen := j.higher[o.Metric]; !seen {
			j.higher[o.Metric] = o.HigherIsBetter
			j.metrics = append(j.metrics, o.Metric)
			best[o.Metric] = map[NIC]float64{}
		} else if h != o.HigherIsBetter {
			return nil, fmt.Errorf("outcome %d: metric %q is both higher- and lower-is-better; give the two their own names", i+1, o.Metric)
		}
		if !measured(o) {
			continue
		}
		for _, n := range []NIC{o.Pair.A, o.Pair.B} {
			b, ok := best[o.Metric][n]
			if !ok || better(o.Value, b, o.HigherIsBetter) {
				best[o.Metric][n] = o.Value
			}
		}
	}
	for metric, bests := range best {
		var vals []float64
		for _, v := range bests {
			vals = append(vals, v)
		}
		j.medians[metric] = median(vals)
	}
	type key struct {
		pair   Pair
		metric string
	}
	index := map[key]int{}
	for _, o := range outcomes {
		k := key{o.Pair, o.Metric}
		i, ok := index[k]
		if !ok {
			i = len(j.verdicts)
			index[k] = i
			j.verdicts = append(j.verdicts, verdict{pair: o.Pair, metric: o.Metric, status: StatusOK})
		}
		v := &j.verdicts[i]
		v.runs++
		status, ratio := StatusOK, 0.0
		switch {
		case o.Env:
			status = StatusEnv
		case !o.OK:
			status = StatusFail
		case measured(o):
			if m := j.medians[o.Metric]; m > 0 {
				ratio = o.Value / m
				if o.HigherIsBetter {
					ratio = m / o.Value
				}
			}
			if ratio > lagFactor {
				status = StatusLag
			}
		}
		if status != StatusOK {
			v.bad++
		}
		if status.severity() > v.status.severity() {
			v.status = status
		}
		if ratio > v.ratio {
			v.ratio, v.value = ratio, o.Value
		}
	}
	for i := range j.verdicts {
		v := &j.verdicts[i]
		if v.bad < v.runs && v.status != StatusOK {
			v.status = StatusOK // a repeat passed: flaky, not broken
		}
	}
	sort.Strings(j.metrics)
	return j, nil
}

func better(a, b float64, higher bool) bool {
	if higher {
		return a > b
	}
	return a < b
}

func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	vals = slices.Clone(vals)
	slices.Sort(vals)
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}

// nicName is "host" or, when devices matter, "host/device".
func nicName(hosts []Host, n NIC, withDevice bool) string {
	if withDevice && n.Device != "" {
		return hosts[n.Host].Name + "/" + n.Device
	}
	return hosts[n.Host].Name
}
