package fleet

import (
	"fmt"
	"testing"
)

// TestBadPairs: failed, unanswered and lagging pairs are bad, each once
// over its metrics; a pair one of whose repeats passed is not.
func TestBadPairs(t *testing.T) {
	hosts := names(4)
	pair := func(a, b int) Pair { return Pair{NIC{Host: a}, NIC{Host: b}} }
	ok := func(p Pair, metric string, v float64) Outcome {
		return Outcome{Pair: p, Metric: metric, OK: true, Value: v}
	}
	outcomes := []Outcome{
		ok(pair(0, 1), "p50", 10e-6), ok(pair(0, 1), "p99", 12e-6),
		ok(pair(2, 3), "p50", 10e-6), ok(pair(2, 3), "p99", 90e-6), // lags on p99 only
		ok(pair(0, 2), "p50", 11e-6), {Pair: pair(0, 2), Metric: "p99"}, // failed
		{Pair: pair(1, 3), Metric: "p50", Env: true}, {Pair: pair(1, 3), Metric: "p99", Env: true},
		ok(pair(0, 3), "p50", 10e-6), ok(pair(0, 3), "p99", 11e-6),
		{Pair: pair(1, 2), Metric: "p50"}, ok(pair(1, 2), "p50", 10e-6), // failed, then passed
		ok(pair(1, 2), "p99", 11e-6),
	}
	got, err := BadPairs(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{pair(2, 3), pair(0, 2), pair(1, 3)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bad pairs %v, want %v", got, want)
	}
	if _, err := BadPairs(hosts, outcomes, 1); err == nil {
		t.Error("lag factor 1 accepted")
	}
}
