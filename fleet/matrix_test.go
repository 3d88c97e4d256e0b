package fleet

import (
	"encoding/json"
	"testing"
)

func TestMatrices(t *testing.T) {
	hosts := names(3)
	p := func(a, b int) Pair { return Pair{NIC{Host: a}, NIC{Host: b}} }
	outcomes := []Outcome{
		{Pair: p(0, 1), Metric: lat, OK: true, Value: 10e-6},
		{Pair: p(0, 2), Metric: lat, OK: true, Value: 50e-6},
		{Pair: p(1, 2), Metric: lat, Env: true},
		{Pair: p(2, 0), Metric: lat, OK: false},
		{Pair: p(1, 0), Metric: "bw", OK: true, Value: 4e9, HigherIsBetter: true},
	}
	got, err := Matrices(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	// Bests: h0 10us, h1 10us, h2 50us: median 10us, so 0->2 lags 5x.
	want := `[{"metric":"bw","higher_is_better":true,"median":4000000000,"hosts":["h0","h1","h2"],` +
		`"cells":[[null,null,null],[{"status":"ok","value":4000000000,"ratio_to_median":1},null,null],[null,null,null]]},` +
		`{"metric":"write-latency p99","higher_is_better":false,"median":0.00001,"hosts":["h0","h1","h2"],` +
		`"cells":[[null,{"status":"ok","value":0.00001,"ratio_to_median":1},{"status":"lag","value":0.00005,"ratio_to_median":5}],` +
		`[null,null,{"status":"env"}],[{"status":"fail"},null,null]]}]`
	if string(data) != want {
		t.Errorf("matrices\n got %s\nwant %s", data, want)
	}
}
