package ethtool

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// driverInfo is a struct ethtool_drvinfo as the kernel returns it, with
// the other strings filled so that a parser reading the wrong field
// shows it.
func driverInfo(cmd uint32, driver string) []byte {
	buf := make([]byte, driverInfoSize)
	binary.NativeEndian.PutUint32(buf, cmd)
	copy(buf[driverOffset:], driver)
	copy(buf[driverOffset+driverLen:], "6.18.0\x00")                       // version
	copy(buf[driverOffset+2*driverLen:], "16.35.2000 (MT_0000000838)\x00") // fw_version
	copy(buf[driverOffset+3*driverLen:], "0000:3b:00.0\x00")               // bus_info
	binary.NativeEndian.PutUint32(buf[driverInfoSize-16:], 1024)           // n_stats
	return buf
}

func TestParseDriverInfo(t *testing.T) {
	tests := []struct {
		name    string
		buf     []byte
		want    string
		wantErr string
		noInfo  bool
	}{
		{name: "mlx5", buf: driverInfo(cmdGetDriverInfo, "mlx5_core"), want: "mlx5_core"},
		{name: "veth", buf: driverInfo(cmdGetDriverInfo, "veth"), want: "veth"},
		{name: "31 bytes, the longest a NUL leaves room for", buf: driverInfo(cmdGetDriverInfo, strings.Repeat("d", 31)), want: strings.Repeat("d", 31)},
		{name: "no NUL in the field", buf: driverInfo(cmdGetDriverInfo, strings.Repeat("d", 32)), wantErr: "driver name is not NUL-terminated"},
		{name: "empty name", buf: driverInfo(cmdGetDriverInfo, ""), wantErr: "the device reports no driver", noInfo: true},
		{name: "another command's answer", buf: driverInfo(0x1d, "veth"), wantErr: "driver info answers command 0x1d, want 0x3"},
		{name: "short", buf: driverInfo(cmdGetDriverInfo, "veth")[:100], wantErr: "driver info of 100 bytes, want 196"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDriverInfo(tt.buf)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, want %q", err, tt.want)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("got %q, error %v; want error %q", got, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("driver %q, want %q", got, tt.want)
			}
			if errors.Is(err, ErrNoDriver) != tt.noInfo {
				t.Errorf("errors.Is(%v, ErrNoDriver) = %v, want %v", err, !tt.noInfo, tt.noInfo)
			}
		})
	}
}

func FuzzParseDriverInfo(f *testing.F) {
	f.Add(driverInfo(cmdGetDriverInfo, "mlx5_core"))
	f.Add(driverInfo(cmdGetDriverInfo, ""))
	f.Add(driverInfo(cmdGetDriverInfo, strings.Repeat("d", 32)))
	f.Add([]byte{3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, buf []byte) {
		got, err := parseDriverInfo(buf)
		if err != nil {
			if got != "" {
				t.Errorf("%q returned with error %v", got, err)
			}
			return
		}
		if got == "" || len(got) >= driverLen || strings.IndexByte(got, 0) >= 0 {
			t.Errorf("driver %q: want 1 to %d bytes without NUL", got, driverLen-1)
		}
		if !strings.HasPrefix(string(buf[driverOffset:]), got+"\x00") {
			t.Errorf("driver %q is not the NUL-terminated start of the driver field", got)
		}
	})
}
