package ethtool

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Driver returns the name of the driver behind netdev as the driver
// itself reports it (ETHTOOL_GDRVINFO), for devices sysfs names no driver
// for: a veth or a virtio netdev has no bus driver link, yet answers
// "veth" or "virtio_net" here. A device that reports no driver (lo) returns
// an error wrapping ErrNoDriver; a device that does not exist, one
// wrapping unix.ENODEV.
func Driver(netdev string) (string, error) {
	if netdev == "" || len(netdev) >= unix.IFNAMSIZ {
		return "", fmt.Errorf("ethtool: invalid netdev name %q", netdev)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("ethtool: socket: %w", err)
	}
	defer unix.Close(fd)
	q := query{fd: fd}
	copy(q.req.name[:], netdev)
	buf := make([]byte, driverInfoSize)
	binary.NativeEndian.PutUint32(buf, cmdGetDriverInfo)
	if err := q.do(buf); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			// The kernel answers so when the driver has no driver info
			// and the device no parent whose driver it could name.
			return "", fmt.Errorf("ethtool: %s: %w (%w)", netdev, ErrNoDriver, err)
		}
		return "", fmt.Errorf("ethtool: %s: driver info: %w", netdev, err)
	}
	name, err := parseDriverInfo(buf)
	if err != nil {
		return "", fmt.Errorf("ethtool: %s: %w", netdev, err)
	}
	return name, nil
}
