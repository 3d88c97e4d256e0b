package doctor

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseLimits(t *testing.T) {
	in := "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max locked memory         65536                unlimited            bytes     \n" +
		"Max nice priority         0                    0                    \n" +
		"Max cpu time              unlimited            unlimited            seconds   \n"
	got, err := parseLimits(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]limit{
		"Max locked memory": {65536, -1, "bytes"},
		"Max nice priority": {0, 0, ""},
		"Max cpu time":      {-1, -1, "seconds"},
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseLimits = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "Limit Soft Limit Hard Limit Units\n", "Max locked memory lots lots bytes\n", "Max locked memory -1 0 bytes\n", "x 1\n"} {
		if got, err := parseLimits(bad); err == nil {
			t.Errorf("parseLimits(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzParseLimits(f *testing.F) {
	f.Add("Limit Soft Limit Hard Limit Units\nMax locked memory 65536 65536 bytes\n")
	f.Add("Max nice priority 0 0\nMax cpu time unlimited unlimited seconds\n")
	f.Add("Max locked memory lots lots bytes")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseLimits(s)
		if err != nil {
			return
		}
		// Every accepted row prints back to the same row.
		var b strings.Builder
		for name, l := range got {
			if name == "" || l.soft < -1 || l.hard < -1 {
				t.Fatalf("parseLimits(%q): row %q = %+v", s, name, l)
			}
			b.WriteString(name + " " + limitText(l.soft) + " " + limitText(l.hard) + " " + l.unit + "\n")
		}
		again, err := parseLimits(b.String())
		if err != nil || !maps.Equal(again, got) {
			t.Errorf("parseLimits(%q) = %v, reads back as %v, %v", s, got, again, err)
		}
	})
}

func limitText(v int64) string {
	if v < 0 {
		return "unlimited"
	}
	return strconv.FormatInt(v, 10)
}

func TestParseMeminfo(t *testing.T) {
	got, err := parseMeminfo("MemTotal:       263846840 kB\nHugePages_Total:     512\n\nHugepagesize:       2048 kB\n")
	want := map[string]uint64{"MemTotal": 263846840, "HugePages_Total": 512, "Hugepagesize": 2048}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("parseMeminfo = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "MemTotal 12 kB\n", "MemTotal: twelve kB\n", "MemTotal: 12 MB\n", "Mem Total: 12 kB\n", ": 1\n"} {
		if got, err := parseMeminfo(bad); err == nil {
			t.Errorf("parseMeminfo(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add("MemTotal:       263846840 kB\nHugePages_Total:     512\n")
	f.Add("Hugepagesize: 2048 kB")
	f.Add("x: 1 MB")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseMeminfo(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for name, v := range got {
			b.WriteString(name + ": " + strconv.FormatUint(v, 10) + " kB\n")
		}
		again, err := parseMeminfo(b.String())
		if err != nil || !maps.Equal(again, got) {
			t.Errorf("parseMeminfo(%q) = %v, reads back as %v, %v", s, got, again, err)
		}
	})
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0-3,8\n":   {0, 1, 2, 3, 8},
		"5":         {5},
		"2-3,0-1,2": {0, 1, 2, 3},
		"":          {},
	} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"a", "3-1", "1-", "-1", "1,,2", "0-99999999", "65537"} {
		if got, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) = %v, want an error", bad, got)
		}
	}
	if _, err := ParseCPUs(" "); err == nil {
		t.Error("ParseCPUs accepted an empty list")
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8", "5", "", "3-1", "0-65536", "0-65537"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseCPUList(s)
		if err != nil {
			return
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("parseCPUList(%q) = %v, want sorted and unique", s, got)
		}
		parts := make([]string, len(got))
		for i, c := range got {
			parts[i] = strconv.Itoa(c)
		}
		again, err := parseCPUList(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, got) {
			t.Errorf("parseCPUList(%q) = %v, reads back as %v, %v", s, got, again, err)
		}
	})
}

func TestParseLinkSpeed(t *testing.T) {
	for in, want := range map[string]float64{"16.0 GT/s PCIe": 16, "8 GT/s": 8, "2.5 GT/s PCIe": 2.5} {
		if got, err := parseLinkSpeed(in); err != nil || got != want {
			t.Errorf("parseLinkSpeed(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"Unknown", "", "0 GT/s", "-8 GT/s", "NaN GT/s", "8 Gb/s"} {
		if got, err := parseLinkSpeed(bad); err == nil {
			t.Errorf("parseLinkSpeed(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzParseLinkSpeed(f *testing.F) {
	for _, s := range []string{"16.0 GT/s PCIe", "8 GT/s", "Unknown", "NaN GT/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := parseLinkSpeed(s); err == nil && !(v > 0 && v < 1e6) {
			t.Errorf("parseLinkSpeed(%q) = %v", s, v)
		}
	})
}

// TestPCIeGbps pins the encodings: a Gen3 x8 link carries about 63 Gb/s,
// which is why it cannot feed a 100 Gb/s port.
func TestPCIeGbps(t *testing.T) {
	for _, tc := range []struct {
		l    pcieLink
		want int
	}{
		{pcieLink{2.5, 8}, 16}, {pcieLink{5, 8}, 32}, {pcieLink{8, 8}, 63}, {pcieLink{16, 16}, 252}, {pcieLink{64, 16}, 968},
	} {
		if got := int(tc.l.gbps() + 0.5); got != tc.want {
			t.Errorf("%s: %d Gb/s, want %d", tc.l, got, tc.want)
		}
	}
}

func TestRoCEMTU(t *testing.T) {
	for netdev, want := range map[int]int{9000: 4096, 4192: 4096, 4191: 2048, 1500: 1024, 1000: 512, 300: 0} {
		if got := roceMTU(netdev); got != want {
			t.Errorf("roceMTU(%d) = %d, want %d", netdev, got, want)
		}
	}
}
