package ethtool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ioctl's commands and layout, from <linux/ethtool.h>. They are part
// of the kernel's user ABI and do not change.
const (
	cmdGetStringSetInfo = 0x37 // ETHTOOL_GSSET_INFO
	cmdGetStrings       = 0x1b // ETHTOOL_GSTRINGS
	cmdGetStats         = 0x1d // ETHTOOL_GSTATS
	stringSetStats      = 1    // ETH_SS_STATS
	nameLen             = 32   // ETH_GSTRING_LEN
	// maxStats bounds what a driver may claim to have; the largest
	// drivers report a few thousand (mlx5 with many channels).
	maxStats = 1 << 16
)

// ifreq is struct ifreq with ifr_data: the name, then a pointer, padded
// to the union's 24 bytes.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// Stats returns the driver statistics of netdev by name. A device whose
// driver keeps none returns an empty map; a device that does not exist
// returns an error wrapping unix.ENODEV.
func Stats(netdev string) (map[string]uint64, error) {
	if netdev == "" || len(netdev) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("ethtool: invalid netdev name %q", netdev)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ethtool: socket: %w", err)
	}
	defer unix.Close(fd)
	q := query{fd: fd}
	copy(q.req.name[:], netdev)

	n, err := q.count()
	if err != nil {
		return nil, fmt.Errorf("ethtool: %s: statistics count: %w", netdev, err)
	}
	if n == 0 {
		return map[string]uint64{}, nil
	}
	names, err := q.names(n)
	if err != nil {
		return nil, fmt.Errorf("ethtool: %s: statistics names: %w", netdev, err)
	}
	values, err := q.values(n)
	if err != nil {
		return nil, fmt.Errorf("ethtool: %s: statistics: %w", netdev, err)
	}
	out := make(map[string]uint64, n)
	for i, name := range names {
		out[name] = values[i]
	}
	return out, nil
}

type query struct {
	fd  int
	req ifreq
}

// do runs one SIOCETHTOOL command whose buffer is buf. buf is allocated
// on the heap by the callers and kept alive until the call returns; the
// Go heap does not move, so the address the kernel sees stays valid.
func (q *query) do(buf []byte) error {
	q.req.data = unsafe.Pointer(&buf[0])
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(q.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&q.req)))
	runtime.KeepAlive(buf)
	q.req.data = nil
	if errno != 0 {
		return errno
	}
	return nil
}

// count asks how many statistics the driver has: struct
// ethtool_sset_info {cmd, reserved, sset_mask u64, data[]}.
func (q *query) count() (int, error) {
	buf := make([]byte, 16+4)
	binary.NativeEndian.PutUint32(buf[0:], cmdGetStringSetInfo)
	binary.NativeEndian.PutUint64(buf[8:], 1<<stringSetStats)
	if err := q.do(buf); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return 0, nil // the driver keeps no statistics
		}
		return 0, err
	}
	if binary.NativeEndian.Uint64(buf[8:])&(1<<stringSetStats) == 0 {
		return 0, nil
	}
	n := binary.NativeEndian.Uint32(buf[16:])
	if n > maxStats {
		return 0, fmt.Errorf("driver claims %d statistics, more than %d", n, maxStats)
	}
	return int(n), nil
}

// names reads struct ethtool_gstrings {cmd, string_set, len, data[len*32]}.
func (q *query) names(n int) ([]string, error) {
	buf := make([]byte, 12+n*nameLen)
	binary.NativeEndian.PutUint32(buf[0:], cmdGetStrings)
	binary.NativeEndian.PutUint32(buf[4:], stringSetStats)
	binary.NativeEndian.PutUint32(buf[8:], uint32(n))
	if err := q.do(buf); err != nil {
		return nil, err
	}
	if got := int(binary.NativeEndian.Uint32(buf[8:])); got != n {
		return nil, fmt.Errorf("driver changed its statistics while they were read (%d names, %d expected)", got, n)
	}
	names := make([]string, n)
	for i := range names {
		raw := buf[12+i*nameLen : 12+(i+1)*nameLen]
		if j := bytes.IndexByte(raw, 0); j >= 0 {
			raw = raw[:j]
		}
		names[i] = string(raw)
	}
	return names, nil
}

// values reads struct ethtool_stats {cmd, n_stats, data[n_stats] u64}.
func (q *query) values(n int) ([]uint64, error) {
	buf := make([]byte, 8+n*8)
	binary.NativeEndian.PutUint32(buf[0:], cmdGetStats)
	binary.NativeEndian.PutUint32(buf[4:], uint32(n))
	if err := q.do(buf); err != nil {
		return nil, err
	}
	if got := int(binary.NativeEndian.Uint32(buf[4:])); got != n {
		return nil, fmt.Errorf("driver changed its statistics while they were read (%d values, %d expected)", got, n)
	}
	values := make([]uint64, n)
	for i := range values {
		values[i] = binary.NativeEndian.Uint64(buf[8+i*8:])
	}
	return values, nil
}
