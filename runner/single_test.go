package runner

import (
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

func TestSingle(t *testing.T) {
	sc, err := Single("bench", []Setting{
		{"op", "--op", "write"}, {"measure", "--measure", "latency"},
		{"sizes", "--sizes", "2,64"}, {"qps", "--qps", "1,2"},
		{"iterations", "--iters", "7"}, {"iterations", "--iters", "5"}, // the last wins
		{"traffic_class", "--tclass", "8"},
		{"pass", "--pass", "p99 < 1s"}, {"pass", "--pass", "errors == 0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	runs := sc.Runs()
	if len(runs) != 4 || sc.Name != "bench" || !sc.IsLoopback() || sc.Device != "auto" {
		t.Fatalf("%d runs, scenario %+v", len(runs), sc)
	}
	for _, r := range runs {
		if r.Spec.Iterations != 5 || r.Spec.QP.TrafficClass != 8 || len(r.Pass) != 2 || r.Case != "bench" {
			t.Errorf("run %d: iterations %d, traffic class %d, %d conditions", r.Index, r.Spec.Iterations, r.Spec.QP.TrafficClass, len(r.Pass))
		}
	}
	// Sizes not given are the engine's default for the measure.
	sc, err = Single("bench", []Setting{{"op", "--op", "write"}, {"measure", "--measure", "both"}})
	if err != nil {
		t.Fatal(err)
	}
	if runs := sc.Runs(); len(runs) != 2 || runs[0].Spec.Size != 2 || runs[1].Spec.Size != 65536 || runs[1].Spec.Measure != rdma.MeasureBandwidth {
		t.Errorf("default sizes: %+v", runs)
	}
}

func TestSingleErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []Setting
		want     string
	}{
		{"alias named", []Setting{{"op", "--op", "write"}, {"measure", "--measure", "latency"}, {"iterations", "--iters", "0"}},
			"--iters: 0 is out of range; write a whole number of 1 or more"},
		{"every problem at once", []Setting{{"op", "--op", "teleport"}, {"measure", "--measure", "latency"}, {"qps", "--qps", "0"}},
			"--op: \"teleport\" is not an op; write send, send_imm, write, write_imm, read, fetch_add or cmp_swap\n--qps: 0 is out of range"},
		{"iterations and duration", []Setting{{"op", "--op", "write"}, {"measure", "--measure", "latency"}, {"iterations", "--iterations", "5"}, {"duration", "--duration", "1s"}},
			"--iterations and --duration: give one, not both"},
		{"engine check", []Setting{{"op", "--op", "read"}, {"measure", "--measure", "latency"}, {"qp_type", "--qp-type", "uc"}},
			"op read needs a response from the target, and UC has none; use qp_type rc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Single("bench", tc.settings)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want it to start with %q", err, tc.want)
			}
		})
	}
}

func TestKnobCheck(t *testing.T) {
	k, _ := LookupKnob("tclass")
	if err := k.Check("8"); err != nil {
		t.Error(err)
	}
	if err := k.Check("300"); err == nil || !strings.HasPrefix(err.Error(), "--traffic-class: 300 is out of range") {
		t.Errorf("error %v", err)
	}
}
