package portstats

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmarun/rdmarun/ethtool"
	"github.com/rdmarun/rdmarun/internal/golden"
)

func TestDeltaGolden(t *testing.T) {
	for _, dev := range []struct{ device, golden string }{
		{"rxe0", "deltas-rxe.golden.json"},
		{"mlx5_0", "deltas-mlx5.golden.json"},
	} {
		t.Run(dev.device, func(t *testing.T) {
			fixtureEthtool(t, "before")
			before, err := Snapshot("testdata/before", dev.device, 1)
			if err != nil {
				t.Fatal(err)
			}
			fixtureEthtool(t, "after")
			after, err := Snapshot("testdata/after", dev.device, 1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(Delta(before, after), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, dev.golden, append(got, '\n'))
		})
	}
}

// fixtureEthtool answers ethtool statistics from
// testdata/ethtool-WHEN-NETDEV, as `ethtool -S` printed them.
func fixtureEthtool(t *testing.T, when string) {
	saved := readEthtool
	t.Cleanup(func() { readEthtool = saved })
	readEthtool = func(netdev string) (map[string]uint64, error) {
		b, err := os.ReadFile(filepath.Join("testdata", "ethtool-"+when+"-"+netdev))
		if err != nil {
			return nil, err
		}
		return ethtool.Parse(string(b))
	}
}

func TestDelta(t *testing.T) {
	tests := []struct {
		name          string
		before, after Counters
		want          Deltas
	}{
		{
			name:   "plain increase",
			before: Counters{Counters: map[string]uint64{"port_xmit_packets": 10}, HWCounters: map[string]uint64{"rcvd_pkts": 5}},
			after:  Counters{Counters: map[string]uint64{"port_xmit_packets": 25}, HWCounters: map[string]uint64{"rcvd_pkts": 5}},
			want:   Deltas{Counters: map[string]uint64{"port_xmit_packets": 15}, HWCounters: map[string]uint64{"rcvd_pkts": 0}},
		},
		{
			name:   "reset reports the after value",
			before: Counters{HWCounters: map[string]uint64{"rp_cnp_handled": 500, "np_cnp_sent": 12}},
			after:  Counters{HWCounters: map[string]uint64{"rp_cnp_handled": 3, "np_cnp_sent": 12}},
			want: Deltas{
				HWCounters: map[string]uint64{"rp_cnp_handled": 3, "np_cnp_sent": 0},
				Reset:      []string{"hw_counters/rp_cnp_handled"},
			},
		},
		{
			name:   "wrap of a full 64-bit counter",
			before: Counters{Counters: map[string]uint64{"port_rcv_data": math.MaxUint64 - 1}},
			after:  Counters{Counters: map[string]uint64{"port_rcv_data": 7}},
			want:   Deltas{Counters: map[string]uint64{"port_rcv_data": 7}, Reset: []string{"counters/port_rcv_data"}},
		},
		{
			name:   "same name in both directories stays apart",
			before: Counters{Counters: map[string]uint64{"link_downed": 1}, HWCounters: map[string]uint64{"link_downed": 9}},
			after:  Counters{Counters: map[string]uint64{"link_downed": 2}, HWCounters: map[string]uint64{"link_downed": 0}},
			want: Deltas{
				Counters:   map[string]uint64{"link_downed": 1},
				HWCounters: map[string]uint64{"link_downed": 0},
				Reset:      []string{"hw_counters/link_downed"},
			},
		},
		{
			name:   "names read only once are left out",
			before: Counters{HWCounters: map[string]uint64{"gone": 1, "sent_pkts": 1}},
			after:  Counters{HWCounters: map[string]uint64{"new": 4, "sent_pkts": 2}},
			want:   Deltas{HWCounters: map[string]uint64{"sent_pkts": 1}},
		},
		{
			name:   "lifespan is a setting, not a counter",
			before: Counters{HWCounters: map[string]uint64{"lifespan": 10}},
			after:  Counters{HWCounters: map[string]uint64{"lifespan": 20}},
			want:   Deltas{},
		},
		{
			name:   "lifespan going down is not a reset either",
			before: Counters{HWCounters: map[string]uint64{"lifespan": 20, "sent_pkts": 0}},
			after:  Counters{HWCounters: map[string]uint64{"lifespan": 10, "sent_pkts": 0}},
			want:   Deltas{HWCounters: map[string]uint64{"sent_pkts": 0}},
		},
		{
			name: "empty snapshots",
			want: Deltas{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Delta(tt.before, tt.after)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Delta = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDeltasJSON(t *testing.T) {
	tests := []struct {
		name string
		d    Deltas
		want string
	}{
		{"empty", Deltas{}, `{}`},
		{"empty maps are omitted", Deltas{Counters: map[string]uint64{}, HWCounters: map[string]uint64{}}, `{}`},
		{
			"keys sorted",
			Deltas{HWCounters: map[string]uint64{"sent_pkts": 2, "rcvd_pkts": 1}, Reset: []string{"hw_counters/rcvd_pkts"}},
			`{"hw_counters":{"rcvd_pkts":1,"sent_pkts":2},"reset":["hw_counters/rcvd_pkts"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDeltasNonZeroAndNames(t *testing.T) {
	d := Deltas{
		Counters:   map[string]uint64{"port_xmit_data": 4, "symbol_error": 0, "link_downed": 1},
		HWCounters: map[string]uint64{"rp_cnp_handled": 0, "out_of_sequence": 4, "link_downed": 0},
		Reset:      []string{"hw_counters/rp_cnp_handled"},
	}
	wantNames := []string{
		"counters/link_downed", "counters/port_xmit_data", "counters/symbol_error",
		"hw_counters/link_downed", "hw_counters/out_of_sequence", "hw_counters/rp_cnp_handled",
	}
	if got := d.Names(); !slices.Equal(got, wantNames) {
		t.Errorf("Names = %q, want %q", got, wantNames)
	}
	nz := d.NonZero()
	want := Deltas{
		Counters:   map[string]uint64{"port_xmit_data": 4, "link_downed": 1},
		HWCounters: map[string]uint64{"out_of_sequence": 4},
		Reset:      []string{"hw_counters/rp_cnp_handled"},
	}
	if !reflect.DeepEqual(nz, want) {
		t.Errorf("NonZero = %+v, want %+v", nz, want)
	}
	wantNZNames := []string{"counters/link_downed", "counters/port_xmit_data", "hw_counters/out_of_sequence"}
	if got := nz.Names(); !slices.Equal(got, wantNZNames) {
		t.Errorf("NonZero().Names = %q, want %q", got, wantNZNames)
	}
	// NonZero must not share storage with d, or trimming a report would
	// edit the full result it came from.
	nz.Reset[0] = "changed"
	if d.Reset[0] != "hw_counters/rp_cnp_handled" {
		t.Error("NonZero shares Reset with its receiver")
	}
	if got := (Deltas{HWCounters: map[string]uint64{"x": 0}}).NonZero(); got.HWCounters != nil {
		t.Errorf("all-zero NonZero().HWCounters = %v, want nil so JSON omits it", got.HWCounters)
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		name   string
		v      uint64
		want   uint64
		wantOK bool
	}{
		{"port_xmit_data", 2621440, 10 << 20, true},
		{"port_rcv_data", 1, 4, true},
		{"counters/port_rcv_data", 3, 12, true},
		{"port_xmit_data", 0, 0, true},
		{"port_xmit_data", math.MaxUint64 / 4, math.MaxUint64 / 4 * 4, true},
		{"port_xmit_data", math.MaxUint64/4 + 1, 0, false},
		{"hw_counters/port_xmit_data", 1, 0, false},
		{"port_xmit_packets", 5, 0, false},
		{"rcvd_pkts", 5, 0, false},
		{"", 5, 0, false},
	}
	for _, tt := range tests {
		got, ok := Bytes(tt.name, tt.v)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Bytes(%q, %d) = %d, %v; want %d, %v", tt.name, tt.v, got, ok, tt.want, tt.wantOK)
		}
	}
}
