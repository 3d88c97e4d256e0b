package sysfs

import (
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestParseEnum(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Enum
		ok   bool
	}{
		{"4: ACTIVE", Enum{4, "ACTIVE"}, true},
		{"5: LinkUp\n", Enum{5, "LinkUp"}, true},
		{"0: NOP", Enum{0, "NOP"}, true},
		{"3:Disabled", Enum{3, "Disabled"}, true},
		{"5", Enum{}, false},
		{"garbage", Enum{}, false},
		{"x: ACTIVE", Enum{}, false},
		{"", Enum{}, false},
	} {
		got, err := parseEnum(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("parseEnum(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseEnum(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "garbage", "-1: X", ":", "7:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseEnum(s)
		if err != nil {
			if e != (Enum{}) {
				t.Errorf("parseEnum(%q) = %+v with error %v", s, e, err)
			}
			return
		}
		// What is accepted prints back to the same number and name.
		again, err := parseEnum(strconv.Itoa(e.Num) + ": " + e.Name)
		if err != nil || again != e {
			t.Errorf("parseEnum(%q) = %+v, which reads back as %+v, %v", s, e, again, err)
		}
	})
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"10 Gb/sec (1X QDR)":  10,
		"2.5 Gb/sec (1X SDR)": 2.5,
		"400 Gb/sec (4X NDR)": 400,
		"25 Gb/sec":           25,
		"0 Gb/sec":            0,
	} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "unknown", "10 Mb/sec (1X weird)", "-5 Gb/sec", "NaN Gb/sec", "Inf Gb/sec", "1e400 Gb/sec", "x Gb/sec"} {
		if got, err := parseRate(in); err == nil || got != 0 {
			t.Errorf("parseRate(%q) = %v, %v; want an error", in, got, err)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10 Gb/sec (1X QDR)", "2.5 Gb/sec", "fast", "-1 Gb/sec", "1e400 Gb/sec", "Inf Gb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRate(s)
		if err != nil {
			if v != 0 {
				t.Errorf("parseRate(%q) = %v with error %v", s, v, err)
			}
			return
		}
		// A rate is a finite number of Gb/sec, never negative or NaN.
		if !(v >= 0) || math.IsInf(v, 0) || strings.Fields(s)[1] != "Gb/sec" {
			t.Errorf("parseRate(%q) = %v", s, v)
		}
	})
}

func TestParseCounter(t *testing.T) {
	tests := []struct {
		in     string
		want   uint64
		wantOK bool
	}{
		{"0\n", 0, true},
		{"120034\n", 120034, true},
		{"  42 \n", 42, true},
		{"\t7\r\n", 7, true},
		{"18446744073709551615\n", 1<<64 - 1, true},
		{"18446744073709551616\n", 0, false},
		{"", 0, false},
		{"\n", 0, false},
		{"N/A\n", 0, false},
		{"-1\n", 0, false},
		{"+1\n", 0, false},
		{"0x10\n", 0, false},
		{"1_000\n", 0, false},
		{"12 34\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, err := parseCounter(tt.in)
			if (err == nil) != tt.wantOK || got != tt.want {
				t.Errorf("parseCounter(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "120034\n", "  42 \n", "N/A\n", "", "-1", "18446744073709551616", "007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseCounter(s)
		if err != nil {
			if v != 0 {
				t.Errorf("parseCounter(%q) = %d with error %v", s, v, err)
			}
			return
		}
		// Anything accepted is a run of decimal digits inside whitespace
		// that means the number it printed back as.
		trimmed := strings.TrimSpace(s)
		if strings.TrimLeft(trimmed, "0123456789") != "" {
			t.Errorf("parseCounter(%q) accepted non-digits", s)
		}
		if strings.TrimLeft(trimmed, "0") != strings.TrimLeft(strconv.FormatUint(v, 10), "0") {
			t.Errorf("parseCounter(%q) = %d", s, v)
		}
		if again, err := parseCounter(" " + s + "\n"); err != nil || again != v {
			t.Errorf("parseCounter with extra whitespace = %d, %v; want %d", again, err, v)
		}
	})
}

func TestParseLID(t *testing.T) {
	for in, want := range map[string]uint16{"0x1a\n": 26, "0x0": 0, "0xffff": 65535, "1a": 26} {
		if got, err := parseLID(in); err != nil || got != want {
			t.Errorf("parseLID(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "zz", "0x10000", "-0x1", "0x"} {
		if _, err := parseLID(in); err == nil {
			t.Errorf("parseLID(%q) accepted", in)
		}
	}
}

func FuzzParseLID(f *testing.F) {
	for _, s := range []string{"0x1a", "0x0", "0xffff", "zz", "0x10000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseLID(s)
		if err != nil {
			return
		}
		if again, err := parseLID("0x" + strconv.FormatUint(uint64(v), 16)); err != nil || again != v {
			t.Errorf("parseLID(%q) = %d, which reads back as %d, %v", s, v, again, err)
		}
	})
}

func TestParseGID(t *testing.T) {
	for _, tc := range []struct {
		gid, typ  string
		want      string // "" for an empty slot
		wantRoCE2 bool
	}{
		{"fe80:0000:0000:0000:ac1e:b2ff:fe33:4455\n", "RoCE v2\n", "fe80::ac1e:b2ff:fe33:4455", true},
		{"0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "::ffff:10.0.0.1", true},
		{"fe80:0000:0000:0000:b859:9f03:00d4:1e2a", "IB/RoCE v1", "fe80::b859:9f03:d4:1e2a", false},
		{"0000:0000:0000:0000:0000:0000:0000:0000", "", "", false},
		{"fe80::1", "", "", false},
		{"not a gid", "RoCE v2", "", false},
	} {
		gid, ok := parseGID(tc.gid)
		v2, typed := parseGIDType(tc.typ)
		got := ""
		if ok && typed {
			got = gid.String()
			if len(gid) != net.IPv6len {
				got = "short"
			}
		}
		// net.IP prints IPv4-mapped GIDs without ::ffff:; compare the 16 bytes.
		if want := net.ParseIP(tc.want); (tc.want == "") != (got == "") || (got != "" && !want.Equal(gid)) || (got != "" && v2 != tc.wantRoCE2) {
			t.Errorf("GID %q type %q = %s v2 %v; want %s v2 %v", tc.gid, tc.typ, got, v2, tc.want, tc.wantRoCE2)
		}
	}
}

func FuzzParseGID(f *testing.F) {
	for _, s := range []string{"fe80:0000:0000:0000:ac1e:b2ff:fe33:4455", "0000:0000:0000:0000:0000:ffff:0a00:0001", "::", "10.0.0.1", "x"} {
		f.Add(s, "RoCE v2")
	}
	f.Add("fe80::1", "IB/RoCE v1")
	f.Add("fe80::1", "")
	f.Fuzz(func(t *testing.T, gid, typ string) {
		if ip, ok := parseGID(gid); ok && (len(ip) != net.IPv6len || ip.IsUnspecified()) {
			t.Errorf("parseGID(%q) = %v, want 16 bytes, not all zero", gid, ip)
		}
		if v2, ok := parseGIDType(typ); !ok && (v2 || strings.TrimSpace(typ) != "") {
			t.Errorf("parseGIDType(%q) = %v, %v", typ, v2, ok)
		}
	})
}
