package ethtool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNoDriver says a netdev reports no driver name.
var ErrNoDriver = errors.New("the device reports no driver")

// struct ethtool_drvinfo, from <linux/ethtool.h>: cmd (u32); driver,
// version, fw_version, bus_info and erom_version (32 bytes each);
// reserved2 (12 bytes); then n_priv_flags, n_stats, testinfo_len,
// eedump_len and regdump_len (u32 each). Only cmd and driver are read;
// the kernel copies the whole struct back, so the buffer has its size.
const (
	cmdGetDriverInfo = 0x03 // ETHTOOL_GDRVINFO
	driverInfoSize   = 4 + 5*32 + 12 + 5*4
	driverOffset     = 4
	driverLen        = 32
)

// parseDriverInfo reads the driver name out of a struct ethtool_drvinfo
// the kernel filled: a NUL-terminated string in a 32-byte field.
func parseDriverInfo(buf []byte) (string, error) {
	if len(buf) < driverInfoSize {
		return "", fmt.Errorf("driver info of %d bytes, want %d", len(buf), driverInfoSize)
	}
	if cmd := binary.NativeEndian.Uint32(buf); cmd != cmdGetDriverInfo {
		return "", fmt.Errorf("driver info answers command %#x, want %#x", cmd, cmdGetDriverInfo)
	}
	raw := buf[driverOffset : driverOffset+driverLen]
	end := bytes.IndexByte(raw, 0)
	if end < 0 {
		return "", errors.New("driver name is not NUL-terminated")
	}
	if end == 0 {
		return "", ErrNoDriver
	}
	return string(raw[:end]), nil
}
