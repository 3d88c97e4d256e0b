//go:build !linux

package ethtool

import "errors"

// Stats needs Linux's SIOCETHTOOL ioctl.
func Stats(netdev string) (map[string]uint64, error) {
	return nil, errors.New("ethtool: statistics need Linux")
}
