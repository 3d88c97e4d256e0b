package ethtool

import (
	"maps"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := Parse("NIC statistics:\n     rx_prio3_pause: 12\n     rx-0:packets: 7\n\n")
	want := map[string]uint64{"rx_prio3_pause": 12, "rx-0:packets": 7}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("Parse = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"rx_pause 12", "rx_pause: x", ": 3", "rx_pause: -1"} {
		if got, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("NIC statistics:\n     rx_prio3_pause: 12\n")
	f.Add("rx-0:packets: 7")
	f.Add("x: y")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if err != nil {
			return
		}
		var b strings.Builder
		b.WriteString("NIC statistics:\n")
		for name, v := range got {
			if name != strings.TrimSpace(name) || strings.Contains(name, "\n") {
				t.Fatalf("Parse(%q): name %q", s, name)
			}
			b.WriteString("     " + name + ": " + strconv.FormatUint(v, 10) + "\n")
		}
		again, err := Parse(b.String())
		if err != nil || !maps.Equal(again, got) {
			t.Errorf("Parse(%q) = %v, reads back as %v, %v", s, got, again, err)
		}
	})
}
