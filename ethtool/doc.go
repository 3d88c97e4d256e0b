// Package ethtool reads a network device's driver statistics, the
// numbers `ethtool -S NETDEV` prints, with the SIOCETHTOOL ioctl. RoCE
// NICs keep their pause-frame counters (PFC and link-level flow control)
// there and nowhere else: neither sysfs nor the RDMA counters show them.
//
// The ioctl needs no privilege for statistics, costs three system calls
// and does not start a process, so a test can read it before and after
// every run and an exporter on every scrape.
//
// Driver asks the same ioctl for the name of a netdev's driver, which
// sysfs cannot give for virtual devices (veth, virtio_net) that have no
// bus driver link.
package ethtool
