package units

import "testing"

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  string
	}{
		{in: "2", want: 2},
		{in: "64B", want: 64},
		{in: "4KiB", want: 4096},
		{in: " 8 MiB ", want: 8 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "1KB", want: 1000},
		{in: "3MB", want: 3e6},
		{in: "64K", want: 65536},
		{in: "0", want: 0},
		{in: "", err: `size "" is empty; write a number of bytes such as 64 or 4KiB`},
		{in: "4kib", err: `size "4kib" is not a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)`},
		{in: "1.5KiB", err: `size "1.5KiB" is not a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)`},
		{in: "-1", err: `size "-1" is not a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)`},
		{in: "99999999999999GiB", err: `size "99999999999999GiB" is too large`},
	} {
		got, err := ParseBytes(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseBytes(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[uint64]string{2: "2B", 1024: "1KiB", 4096: "4KiB", 1536: "1536B", 8 << 20: "8MiB", 1 << 30: "1GiB", 0: "0B"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"2", "4KiB", "8 MiB", "1GB", "", "x", "18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			return
		}
		// What parses must print and parse back to the same number.
		back, err := ParseBytes(FormatBytes(n))
		if err != nil || back != n {
			t.Fatalf("%q -> %d -> %q -> %d, %v", s, n, FormatBytes(n), back, err)
		}
	})
}
