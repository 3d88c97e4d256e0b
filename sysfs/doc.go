// Package sysfs is the only reader of /sys/class/infiniband, the kernel's
// view of RDMA devices and their ports. `rdmarun devices` (through rdma),
// the per-test counter deltas (portstats) and rdmarun_exporter's port
// collector all read through it, so they agree on where the tree is, how
// each file is parsed and which driver a device has.
//
// A file that cannot be read or parsed costs only itself: it is reported
// as a FileError on its device or port, and every other file of that port
// is still read. Drivers answer EINVAL or EOPNOTSUPP for counters they do
// not implement, and a listing or a scrape that failed on one of them
// would hide every healthy value next to it. Files whose absence is
// normal (parent on hardware, fw_ver on some drivers, counters/ on rxe)
// are no error when absent.
//
// The package imports nothing of the project: rdma, portstats and the
// exporter build their own views on top of it.
package sysfs
