package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// config builds a configuration space with a capability list: the
// capabilities as (offset, id, next) and Device Control at the PCI
// Express one.
func config(size int, caps [][3]byte, devCtl uint16) []byte {
	c := make([]byte, size)
	c[pciStatus] = pciStatusCapList
	if len(caps) > 0 {
		c[pciCapPointer] = caps[0][0]
	}
	for _, cp := range caps {
		c[cp[0]], c[cp[0]+1] = cp[1], cp[2]
		if cp[1] == pciCapExpress {
			c[int(cp[0])+pcieDevCtl] = byte(devCtl)
			c[int(cp[0])+pcieDevCtl+1] = byte(devCtl >> 8)
		}
	}
	return c
}

func TestMaxReadRequest(t *testing.T) {
	pm := [3]byte{0x40, 0x01, 0x60}
	exp := [3]byte{0x60, 0x10, 0x00}
	if pm[2] != exp[0] {
		t.Fatal("the power management capability must point at the PCI Express one")
	}
	for _, tc := range []struct {
		name   string
		config []byte
		want   int
		err    string
	}{
		{"4096 after power management", config(256, [][3]byte{pm, exp}, 0x5137), 4096, ""},
		{"512", config(256, [][3]byte{pm, exp}, 0x2137), 512, ""},
		{"128 first in the list", config(256, [][3]byte{{0x40, 0x10, 0x00}}, 0x0000), 128, ""},
		{"non-root view", config(256, [][3]byte{pm, exp}, 0x5137)[:64], 0, errConfigShort.Error()},
		{"no capability list", make([]byte, 256), 0, "the function lists no capabilities"},
		{"no PCI Express", config(256, [][3]byte{{0x40, 0x01, 0x00}}, 0), 0, "no PCI Express capability"},
		{"into the header", config(256, [][3]byte{{0x40, 0x01, 0x10}}, 0), 0, "capability pointer 0x10 points into the header"},
		{"loop", config(256, [][3]byte{{0x40, 0x01, 0x40}}, 0), 0, "no PCI Express capability"},
		{"short", make([]byte, 10), 0, "config space of 10 bytes, shorter than its 64-byte header"},
		{"reserved", config(256, [][3]byte{exp}, 0x6000), 0, "Max_Read_Request_Size holds the reserved value 6"},
	} {
		got, err := maxReadRequest(tc.config)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: %d, %v; want %d, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
	if _, err := maxReadRequest(config(256, [][3]byte{pm, exp}, 0)[:64]); !errors.Is(err, errConfigShort) {
		t.Errorf("the non-root view is not errConfigShort: %v", err)
	}
}

func FuzzMaxReadRequest(f *testing.F) {
	f.Add(config(256, [][3]byte{{0x40, 0x01, 0x60}, {0x60, 0x10, 0x00}}, 0x5137))
	f.Add(config(256, [][3]byte{{0x40, 0x01, 0x40}}, 0))
	f.Add(config(256, [][3]byte{{0x40, 0x01, 0x60}, {0x60, 0x10, 0x00}}, 0)[:64])
	for _, host := range []string{"mlx5-roce", "bnxt-roce"} {
		if matches, _ := filepath.Glob(filepath.Join("testdata", host, "sys", "devices", "*", "*", "*", "config")); len(matches) == 1 {
			if b, err := os.ReadFile(matches[0]); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := maxReadRequest(b)
		if err != nil {
			return
		}
		// The register's three bits give 128 to 4096; 6 and 7 are
		// reserved.
		if v < 128 || v > 4096 || v&(v-1) != 0 {
			t.Errorf("maxReadRequest = %d", v)
		}
	})
}
