//go:build !linux

package ethtool

import "errors"

// Driver needs Linux's SIOCETHTOOL ioctl.
func Driver(netdev string) (string, error) {
	return "", errors.New("ethtool: driver info needs Linux")
}
